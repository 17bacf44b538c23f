package tracer

import (
	"testing"

	"github.com/cilium/ebpf"
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
	for _, name := range allocatedOnUse {
		m := spec.Maps[name]
		if m == nil {
			continue
		}
		if m.Type != ebpf.Hash {
			t.Errorf("map %s is a %v: only plain hash maps may allocate on use", name, m.Type)
		}
		if m.Flags&unix.BPF_F_NO_PREALLOC == 0 {
			t.Errorf("map %s is preallocated, want allocated on use", name)
		}
	}
}
