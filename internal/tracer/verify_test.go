package tracer

import (
	"testing"

	"github.com/cilium/ebpf"
)

// The programs attached at start, each loaded alone as a run configures
// it: the verifier's part of start-up. verified-insns is the kernel's
// count of the instructions it walked (ProgramInfo.VerifiedInstructions);
// ns/op, the whole load (relocation, verification, JIT). Rerun with
//
//	go test -run '^$' -bench LoadProgram ./internal/tracer/
func BenchmarkLoadProgram(b *testing.B) {
	needBPF(b)
	configs := []struct {
		name string
		opts Options
	}{
		{"audit", Options{MarksLater: func() []Mark { return nil }, FollowGoTests: true}},
		{"landlock", Options{FollowGoTests: true, Enforce: &EnforceOptions{Tier: "landlock", MetadataGuarded: true}}},
		{"kill", Options{FollowGoTests: true, Enforce: &EnforceOptions{Tier: "kill", Kill: true}}},
	}
	programs := []string{"sys_exit", "sys_enter", "uring_submit", "sched_fork", "sched_exec", "sched_exit"}
	for _, c := range configs {
		spec, err := parse()
		if err != nil {
			b.Fatal(err)
		}
		if err := configure(spec, c.opts); err != nil {
			b.Fatal(err)
		}
		mapsOnly := *spec
		mapsOnly.Programs = nil
		maps, err := ebpf.NewCollectionWithOptions(&mapsOnly, ebpf.CollectionOptions{Cache: kernelBTF})
		if err != nil {
			b.Fatal(err)
		}
		for _, name := range programs {
			one := *spec
			one.Programs = map[string]*ebpf.ProgramSpec{name: spec.Programs[name]}
			b.Run(c.name+"/"+name, func(b *testing.B) {
				var verified uint32
				for b.Loop() {
					coll, err := ebpf.NewCollectionWithOptions(&one, ebpf.CollectionOptions{MapReplacements: maps.Maps, Cache: kernelBTF})
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
		}
		maps.Close()
	}
}
