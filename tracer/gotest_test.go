package tracer

import (
	"slices"
	"testing"

	"github.com/writewatch/writewatch/internal/gobin"
	"golang.org/x/sys/unix"
)

// A file named by the kernel in an exec record is found again under the
// name stat gave it.
func TestKernelFileRoundTrip(t *testing.T) {
	var st unix.Stat_t
	if err := unix.Stat("/proc/self/exe", &st); err != nil {
		t.Fatal(err)
	}
	id := fileID{st.Dev, st.Ino}
	k := id.kernelFile()
	if got := fileOfKernel(k.Ino, k.Dev); got != id {
		t.Errorf("%+v → %+v → %+v", id, k, got)
	}
}

// Every function gobin finds is hooked, with its cookie, and no other.
func TestGoProbesAreTheHooks(t *testing.T) {
	var got []string
	for _, p := range goProbes {
		got = append(got, p.symbol)
	}
	if !slices.Equal(got, gobin.Hooks) {
		t.Errorf("goProbes hook %v, gobin.Hooks are %v", got, gobin.Hooks)
	}
}
