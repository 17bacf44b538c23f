package tracer

import (
	"errors"
	"slices"
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// verifyConfigs are the ways a run configures the programs: without
// --enforce, and under --enforce's landlock and kill tiers.
var verifyConfigs = []struct {
	name string
	opts Options
}{
	{"audit", Options{MarksLater: func() []Mark { return nil }, FollowGoTests: true}},
	{"landlock", Options{FollowGoTests: true, Enforce: &EnforceOptions{Tier: "landlock", MetadataGuarded: true}}},
	{"kill", Options{FollowGoTests: true, Enforce: &EnforceOptions{Tier: "kill", Kill: true}}},
}

// verifyPrograms are the programs attached at start.
var verifyPrograms = []string{"sys_exit", "sys_enter", "uring_submit", "sched_fork", "sched_exec", "sched_exit", "rename_target", "setattr_target"}

// fentryPrograms are those of verifyPrograms that need BPF trampolines:
// a kernel that refuses fentry programs outright (EPERM, ENOTSUPP before
// the verifier runs) runs without them (Tracer.PriorErr).
var fentryPrograms = []string{"rename_target", "setattr_target"}

// noFentry reports whether loading fentry program name failed because
// the kernel takes no fentry programs, not because the verifier refused
// it.
func noFentry(name string, err error) bool {
	return slices.Contains(fentryPrograms, name) && (errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOTSUP))
}

// eachProgram calls fn for each of verifyPrograms under each of
// verifyConfigs, with a spec of that program alone and the maps it uses,
// made once for the configuration.
func eachProgram(tb testing.TB, fn func(config, name string, one *ebpf.CollectionSpec, maps map[string]*ebpf.Map)) {
	needBPF(tb)
	for _, c := range verifyConfigs {
		spec, err := parse()
		if err != nil {
			tb.Fatal(err)
		}
		if err := configure(spec, c.opts); err != nil {
			tb.Fatal(err)
		}
		mapsOnly := *spec
		mapsOnly.Programs = nil
		maps, err := ebpf.NewCollectionWithOptions(&mapsOnly, ebpf.CollectionOptions{Cache: kernelBTF})
		if err != nil {
			tb.Fatal(err)
		}
		for _, name := range verifyPrograms {
			one := *spec
			one.Programs = map[string]*ebpf.ProgramSpec{name: spec.Programs[name]}
			fn(c.name, name, &one, maps.Maps)
		}
		maps.Close()
	}
}

// Every program attached at start loads on this kernel, under each way a
// run configures it: the verifier accepts it. (The Go test probe loads
// in the Go test attribution tests.)
func TestProgramsLoad(t *testing.T) {
	eachProgram(t, func(config, name string, one *ebpf.CollectionSpec, maps map[string]*ebpf.Map) {
		coll, err := ebpf.NewCollectionWithOptions(one, ebpf.CollectionOptions{MapReplacements: maps, Cache: kernelBTF})
		if noFentry(name, err) {
			t.Logf("%s/%s: this kernel takes no fentry programs: %v", config, name, err)
			return
		}
		if err != nil {
			t.Errorf("%s/%s: %v", config, name, err)
			return
		}
		coll.Close()
	})
}

// The programs attached at start, each loaded alone as a run configures
// it: the verifier's part of start-up. verified-insns is the kernel's
// count of the instructions it walked (ProgramInfo.VerifiedInstructions);
// ns/op, the whole load (relocation, verification, JIT). Rerun with
//
//	go test -run '^$' -bench LoadProgram ./tracer/
func BenchmarkLoadProgram(b *testing.B) {
	eachProgram(b, func(config, name string, one *ebpf.CollectionSpec, maps map[string]*ebpf.Map) {
		b.Run(config+"/"+name, func(b *testing.B) {
			var verified uint32
			for b.Loop() {
				coll, err := ebpf.NewCollectionWithOptions(one, ebpf.CollectionOptions{MapReplacements: maps, Cache: kernelBTF})
				if noFentry(name, err) {
					b.Skipf("this kernel takes no fentry programs: %v", err)
				}
				if err != nil {
					b.Fatal(err)
				}
				if info, err := coll.Programs[name].Info(); err == nil {
					verified, _ = info.VerifiedInstructions()
				}
				coll.Close()
			}
			b.ReportMetric(float64(verified), "verified-insns")
		})
	})
}
