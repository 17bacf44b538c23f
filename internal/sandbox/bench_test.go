package sandbox

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/writewatch/writewatch/internal/allowlist"
	"github.com/writewatch/writewatch/internal/mountinfo"
	"golang.org/x/sys/unix"
)

// BenchmarkStart makes a sandbox over this machine's mounts and lets it
// go: the mounts read, the plan, the tree built and entered (as root).
func BenchmarkStart(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root (CAP_SYS_ADMIN)")
	}
	list, err := allowlist.Load(allowlist.Options{WorkDir: b.TempDir(), Home: "/nonexistent", Getenv: func(string) string { return "" }})
	if err != nil {
		b.Fatal(err)
	}
	stage := b.TempDir()
	cpu := cpuTime()
	for b.Loop() {
		mounts, err := mountinfo.Read()
		if err != nil {
			b.Fatal(err)
		}
		sb, err := Start(NewPlan(list, mounts, stage), stage)
		if err != nil {
			b.Fatal(err)
		}
		sb.Close()
	}
	b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
}

// BenchmarkChanges lists the changes of a sandbox where 1,000 files of
// 16 KiB were written again, each in one of four ways, and details each
// (what the report shows).
func BenchmarkChanges(b *testing.B) {
	sb, proj := start(b)
	must(b, os.Mkdir(proj+"/many", 0o755))
	data := make([]byte, 16<<10)
	for i := range 1000 {
		must(b, os.WriteFile(fmt.Sprintf("%s/many/%d", proj, i), data, 0o644))
	}
	// Written again the same (its time changed), changed at the end,
	// grown, opened for writing and left alone.
	run(b, sb, proj+"/many", `for i in $(seq 0 999); do
case $((i % 4)) in
0) cat $i > /tmp/x && cat /tmp/x > $i ;;
1) printf x | dd of=$i bs=1 seek=16383 conv=notrunc 2>/dev/null ;;
2) echo more >> $i ;;
3) : >> $i ;;
esac
done`)
	cpu := cpuTime()
	for b.Loop() {
		changes, err := sb.Changes()
		if err != nil {
			b.Fatal(err)
		}
		for i := range changes {
			sb.Detail(&changes[i])
		}
	}
	b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
}

// cpuTime is the CPU time this process used so far, in its threads and
// the kernel: on a busy machine, steadier than the time that passed.
func cpuTime() time.Duration {
	var ru unix.Rusage
	unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
