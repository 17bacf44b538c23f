package tracer

import (
	"fmt"
	"os"
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

// The goroutines map keeps the object's size when COMMAND may run Go
// test binaries, and is smaller otherwise, whether configure or Warm
// sizes it.
func TestGoroutinesSized(t *testing.T) {
	for _, goTests := range []bool{true, false} {
		spec, err := parse()
		if err != nil {
			t.Fatal(err)
		}
		object := spec.Maps["goroutines"].MaxEntries
		if object <= fewGoroutines {
			t.Fatalf("the object's goroutines map holds %d, not more than %d", object, fewGoroutines)
		}
		want := object
		if !goTests {
			want = fewGoroutines
		}
		part, err := heavySpecs(spec, goTests)
		if err != nil {
			t.Fatal(err)
		}
		if got := part.Maps["goroutines"].MaxEntries; got != want {
			t.Errorf("goTests %v: Warm sizes it %d, want %d", goTests, got, want)
		}
		if err := configure(spec, Options{FollowGoTests: true, GoTestsEarly: goTests}); err != nil {
			t.Fatal(err)
		}
		if got := spec.Maps["goroutines"].MaxEntries; got != want {
			t.Errorf("goTests %v: configure sizes it %d, want %d", goTests, got, want)
		}
	}
}

func needBPF(t testing.TB) {
	if os.Geteuid() != 0 {
		t.Skip("creating BPF maps needs root")
	}
}

// Maps Warm made for other options than New's are made again, and only
// those.
func TestRemakeChanged(t *testing.T) {
	needBPF(t)
	spec, err := parse()
	if err != nil {
		t.Fatal(err)
	}
	part, err := heavySpecs(spec, false)
	if err != nil {
		t.Fatal(err)
	}
	maps, err := makeMaps(part, heavyMaps)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { closeMaps(maps) }()
	before := maps["procs"]
	if err := configure(spec, Options{FollowGoTests: true, GoTestsEarly: true, RingBufferBytes: 2 * spec.Maps["events"].MaxEntries}); err != nil {
		t.Fatal(err)
	}
	if err := remakeChanged(spec, maps); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"goroutines", "events"} {
		if got, want := maps[name].MaxEntries(), spec.Maps[name].MaxEntries; got != want {
			t.Errorf("%s holds %d, want %d", name, got, want)
		}
	}
	if maps["procs"] != before {
		t.Error("procs, unchanged, was made again")
	}
	for name, m := range maps {
		if err := spec.Maps[name].Compatible(m); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// The goroutines map's creation, at the object's size and at the size
// used when COMMAND is unlikely to run go: the kernel preallocates every
// entry of an LRU map.
func BenchmarkGoroutinesMap(b *testing.B) {
	needBPF(b)
	spec, err := parse()
	if err != nil {
		b.Fatal(err)
	}
	for _, goTests := range []bool{true, false} {
		part, err := heavySpecs(spec, goTests)
		if err != nil {
			b.Fatal(err)
		}
		ms := part.Maps["goroutines"]
		b.Run(fmt.Sprintf("entries=%d", ms.MaxEntries), func(b *testing.B) {
			for b.Loop() {
				m, err := ebpf.NewMap(ms)
				if err != nil {
					b.Fatal(err)
				}
				m.Close()
			}
		})
	}
}
