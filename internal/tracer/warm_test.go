package tracer

import (
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/features"
	"golang.org/x/sys/unix"
)

// The maps Warm makes ahead and those allocated on use are named in Go:
// a map renamed in the object would silently lose its place there.
func TestWarmMapsExist(t *testing.T) {
	spec, err := parse()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range append(append([]string{}, heavyMaps...), allocatedOnUse...) {
		if spec.Maps[name] == nil {
			t.Errorf("no map %s in the BPF object", name)
		}
	}
	v, err := features.LinuxVersionCode()
	if err != nil {
		t.Fatal(err)
	}
	onUse := v >= 6<<16|1<<8
	for _, name := range allocatedOnUse {
		m := spec.Maps[name]
		if m == nil {
			continue
		}
		if m.Type != ebpf.Hash {
			t.Errorf("map %s is a %v: only plain hash maps may allocate on use", name, m.Type)
		}
		if got := m.Flags&unix.BPF_F_NO_PREALLOC != 0; got != onUse {
			t.Errorf("map %s allocated on use: %v, want %v on kernel %#x", name, got, onUse, v)
		}
	}
}
