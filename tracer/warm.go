package tracer

import (
	"errors"
	"fmt"
	"reflect"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/features"
	"golang.org/x/sys/unix"

	"github.com/writewatch/writewatch/internal/phases"
)

// heavyMaps are the maps whose creation takes longest: the largest hash
// maps, whose sizes are fixed in the object, and the ring buffer (its 8
// MiB, the object's size, take the kernel about 1.7 ms to allocate; a
// run that asks for another size makes it again). They are created
// concurrently, ahead of the programs that use them.
var heavyMaps = []string{"goroutines", "repeats", "procs", "dir_verdicts", "reads", "written", "events"}

// allocatedOnUse are the hash maps that may allocate their entries when
// they are added instead of all at creation, which costs the kernel
// about 20 ms for each of 65536 entries (maps of the LRU type cannot).
// Entries are added at most once per process, file or distinct write,
// and a map that cannot take one more answers as when it is full: the
// programs count that. (Before Linux 6.1, which Preflight refuses, the
// kernel warned when a tracing program used such a map.)
var allocatedOnUse = []string{"procs", "repeats", "reads", "written"}

// fewGoroutines is how many goroutines the goroutines map holds when
// COMMAND is not expected to run Go test binaries (Options.GoTestsEarly
// false): an LRU map is preallocated, and the object's 65536 entries cost
// the kernel about 12 ms to create, on the path to COMMAND's start. Go
// test binaries are still followed then (a program that runs one after
// all); beyond this many goroutines, the least recently used one is
// evicted, and its writes are reported as ambiguous, as in a full map.
const fewGoroutines = 4096

// parse parses the BPF object, with the maps of allocatedOnUse allocated
// on use.
func parse() (*ebpf.CollectionSpec, error) {
	spec, err := loadWritewatch()
	if err != nil {
		return nil, err
	}
	for _, name := range allocatedOnUse {
		if m := spec.Maps[name]; m != nil {
			m.Flags |= unix.BPF_F_NO_PREALLOC
		}
	}
	return spec, nil
}

// sizeGoroutines sizes the goroutines map of spec, as parsed, for
// goTests (Options.GoTestsEarly): as the object says, or at most
// fewGoroutines.
func sizeGoroutines(spec *ebpf.CollectionSpec, goTests bool) {
	if m := spec.Maps["goroutines"]; m != nil && !goTests {
		m.MaxEntries = min(m.MaxEntries, fewGoroutines)
	}
}

// heavySpecs are copies of spec's heavyMaps, sized as configure sizes
// them for goTests.
func heavySpecs(spec *ebpf.CollectionSpec, goTests bool) (*ebpf.CollectionSpec, error) {
	part := &ebpf.CollectionSpec{Maps: map[string]*ebpf.MapSpec{}}
	for _, name := range heavyMaps {
		ms := spec.Maps[name]
		if ms == nil {
			return nil, fmt.Errorf("no map %s in the BPF object", name)
		}
		part.Maps[name] = ms.Copy()
	}
	sizeGoroutines(part, goTests)
	return part, nil
}

// kernelBTF holds the kernel's BTF, read once for every load of this
// process (the programs' CO-RE relocations, the LSM programs, ProbeLSM).
var kernelBTF = btf.NewCache()

var (
	warmOnce sync.Once
	// parsed closes once the object is parsed and the heavy maps made
	// (warmSpec, warmErr and warmMaps set); the kernel's BTF may still be
	// read then: only the programs wait for it, not the maps.
	parsed = make(chan struct{})
	// Set by warmUp before parsed closes.
	warmSpec *ebpf.CollectionSpec
	warmErr  error
	// The first New takes warmSpec and the heavyMaps warmUp made; later
	// ones parse the object again, and make their maps.
	warmMu    sync.Mutex
	warmTaken bool
	warmMaps  map[string]*ebpf.Map
)

// Warm starts, in the background, the part of New that needs almost
// nothing from a run's options: parsing the BPF object, reading the
// kernel's BTF, asking the kernel for uprobe_multi links and creating the
// largest maps. goTests is what Options.GoTestsEarly will be, which sizes
// one of them. A program that will call New calls Warm as early as it
// can, so that this work overlaps its own preparations; New waits for it,
// and makes again a map its options size otherwise. New calls Warm
// itself, so calling it is never needed for correctness.
func Warm(goTests bool) {
	warmOnce.Do(func() { go warmUp(goTests) })
}

func warmUp(goTests bool) {
	go func() {
		defer close(parsed)
		end := phases.Start("warm: parse")
		warmSpec, warmErr = parse()
		end()
		if warmErr != nil {
			return
		}
		if part, err := heavySpecs(warmSpec, goTests); err == nil {
			end := phases.Start("warm: heavy maps")
			if m, err := makeMaps(part, heavyMaps); err == nil {
				warmMaps = m
			}
			end()
		}
	}()
	go features.HaveBPFLinkUprobeMulti()
	// The kernel's BTF takes longest, and every program waits for it: it
	// is read in this goroutine, which already runs, rather than in one
	// that would wait for a free thread while the caller prepares. A
	// caller of kernelBTF.Kernel meanwhile waits for this read, and does
	// not read it again.
	end := phases.Start("warm: kernel BTF")
	kernelBTF.Kernel() // its error, if any, comes back at load
	end()
}

// spec is the parsed object for one New to change, and the heavy maps
// Warm made, if no New took them before (nil then); the caller owns and
// closes them. goTests is passed on to Warm.
func spec(goTests bool) (*ebpf.CollectionSpec, map[string]*ebpf.Map, error) {
	Warm(goTests)
	<-parsed
	if warmErr != nil {
		return nil, nil, warmErr
	}
	warmMu.Lock()
	defer warmMu.Unlock()
	if warmTaken {
		s, err := parse()
		return s, nil, err
	}
	warmTaken = true
	s, m := warmSpec, warmMaps
	warmSpec, warmMaps = nil, nil
	return s, m, nil
}

// makeMaps creates the maps of spec named names, concurrently. On error,
// none is left open.
func makeMaps(spec *ebpf.CollectionSpec, names []string) (map[string]*ebpf.Map, error) {
	maps := make([]*ebpf.Map, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		ms := spec.Maps[name]
		if ms == nil {
			errs[i] = fmt.Errorf("no map %s in the BPF object", name)
			continue
		}
		wg.Go(func() { maps[i], errs[i] = ebpf.NewMap(ms) })
	}
	wg.Wait()
	out := make(map[string]*ebpf.Map, len(names))
	for i, m := range maps {
		if m != nil {
			out[names[i]] = m
		}
	}
	if err := errors.Join(errs...); err != nil {
		closeMaps(out)
		return nil, err
	}
	return out, nil
}

// remakeChanged makes again, from spec, those of maps that no longer
// match it (a map Warm made, sized otherwise by the options), and puts
// them in maps in place of the old ones, which it closes.
func remakeChanged(spec *ebpf.CollectionSpec, maps map[string]*ebpf.Map) error {
	var names []string
	for name, m := range maps {
		if spec.Maps[name].Compatible(m) != nil {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	made, err := makeMaps(spec, names)
	if err != nil {
		return err
	}
	for name, m := range made {
		maps[name].Close()
		maps[name] = m
	}
	return nil
}

func closeMaps(maps map[string]*ebpf.Map) {
	for _, m := range maps {
		m.Close()
	}
}

// all is every map, by its name in the object.
func (m *writewatchMaps) all() map[string]*ebpf.Map {
	out := map[string]*ebpf.Map{}
	v := reflect.ValueOf(m).Elem()
	for i := range v.NumField() {
		if mp, ok := v.Field(i).Interface().(*ebpf.Map); ok && mp != nil {
			out[v.Type().Field(i).Tag.Get("ebpf")] = mp
		}
	}
	return out
}
