package witness

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BenchmarkOutsideWriter measures what the witness costs a process it
// is not interested in: the marks cover whole filesystems, so every
// change anyone makes there is an event, queued in the writer's own
// system call. A child process creates, writes, closes and unlinks b.N
// small files in a directory of the watched filesystem; ns/op is the
// child's wall time per file, writer-cpu-ns/op the CPU time it spent
// (user and system) per file, which other load on the machine disturbs
// less. reader-ns/op is the CPU the witness's
// reader spent per file (including the Sync after the child exits),
// events/op the records it read per file.
//
//	go test -run '^$' -bench OutsideWriter -benchtime 1000000x ./internal/witness/
func BenchmarkOutsideWriter(b *testing.B) {
	needRoot(b)
	for _, mode := range []string{"unwatched", "watched", "watched-declined", "watched-ignored"} {
		b.Run(mode, func(b *testing.B) {
			dir := tempDir(b)
			var w *Witness
			if mode != "unwatched" {
				var n atomic.Uint64
				opts := Options{Paths: []string{dir}, SyncDir: b.TempDir(), Handle: func(Event) { n.Add(1) }}
				if mode == "watched-declined" {
					// The run's case: the writer is not of the tree.
					opts.Wanted = func(int32) bool { return false }
				}
				var err error
				if w, err = New(opts); err != nil {
					b.Fatal(err)
				}
				defer w.Close()
				if mode == "watched-ignored" {
					if err := w.Ignore(dir); err != nil {
						b.Skip(err)
					}
				}
			}
			before := w.statsOrZero()
			cpu0 := selfCPU()
			b.ResetTimer()
			cmd := child(b, nil, "churn", dir, fmt.Sprint(b.N))
			if err := cmd.Wait(); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			st := cmd.ProcessState
			b.ReportMetric(float64((st.UserTime()+st.SystemTime()).Nanoseconds())/float64(b.N), "writer-cpu-ns/op")
			if w == nil {
				return
			}
			sync1(b, w)
			after := w.Stats()
			b.ReportMetric(float64(selfCPU()-cpu0)/float64(b.N), "reader-ns/op")
			b.ReportMetric(float64(after.Read-before.Read)/float64(b.N), "events/op")
		})
	}
}

// BenchmarkRewrite measures what the marks cost a process that rewrites
// a file that exists already: each op opens one file of the watched
// filesystem for writing, writes 64 bytes at its start and closes it.
// ns/op is the loop's wall time, writer-cpu-ns/op the CPU time (user and
// system) its thread spent per op. The modes:
//
//   - unmarked: no witness;
//   - marked: the full marks;
//   - contents-later: ContentsLater, before WatchContents;
//   - contents-later-ignored: the same, with the file's directory
//     ignored (Ignore);
//   - contents-later-watched-file: the same, with the file marked by
//     WatchFile.
//
// The witness declines every event (Wanted), as the run does a process
// outside the tree's, so that its reader takes little of the machine.
//
//	go test -run '^$' -bench Rewrite -count 10 ./internal/witness/
func BenchmarkRewrite(b *testing.B) {
	needRoot(b)
	modes := []string{"unmarked", "marked", "contents-later", "contents-later-ignored", "contents-later-watched-file"}
	for _, mode := range modes {
		b.Run(mode, func(b *testing.B) {
			dir := tempDir(b)
			path := dir + "/file"
			if err := os.WriteFile(path, nil, 0o644); err != nil {
				b.Fatal(err)
			}
			if mode != "unmarked" {
				w, err := New(Options{
					Paths: []string{dir}, SyncDir: b.TempDir(), Handle: func(Event) {},
					Wanted:        func(int32) bool { return false },
					ContentsLater: strings.HasPrefix(mode, "contents-later"),
				})
				if err != nil {
					b.Fatal(err)
				}
				defer w.Close()
				switch mode {
				case "contents-later-ignored":
					if err := w.Ignore(dir); err != nil {
						b.Skip(err)
					}
				case "contents-later-watched-file":
					f, err := os.OpenFile(path, os.O_WRONLY, 0)
					if err != nil {
						b.Fatal(err)
					}
					defer f.Close()
					if err := w.WatchFile(int(f.Fd())); err != nil {
						b.Fatal(err)
					}
				}
			}
			data := make([]byte, 64)
			rewrite := func() {
				fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CLOEXEC, 0)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := unix.Pwrite(fd, data, 0); err != nil {
					b.Fatal(err)
				}
				if err := unix.Close(fd); err != nil {
					b.Fatal(err)
				}
			}
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			// A warm-up, untimed: without it the first mode of each round
			// ran slower, whichever it was.
			for start := time.Now(); time.Since(start) < 100*time.Millisecond; {
				rewrite()
			}
			cpu0 := threadCPU()
			for b.Loop() {
				rewrite()
			}
			b.ReportMetric(float64(threadCPU()-cpu0)/float64(b.N), "writer-cpu-ns/op")
		})
	}
}

// threadCPU is the calling thread's user and system CPU time, in
// nanoseconds.
func threadCPU() int64 {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

func (w *Witness) statsOrZero() Stats {
	if w == nil {
		return Stats{}
	}
	return w.Stats()
}

// selfCPU is this process's user and system CPU time, in nanoseconds.
func selfCPU() int64 {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkDecodeRecord is the per-record cost of decoding, without the
// kernel: a create event as FAN_REPORT_DFID_NAME_TARGET reports it.
func BenchmarkDecodeRecord(b *testing.B) {
	buf := testRecord(unix.FAN_CREATE, 1234, []info{
		{typ: unix.FAN_EVENT_INFO_TYPE_DFID_NAME, htype: 1, handle: []byte{1, 2, 3, 4, 5, 6, 7, 8}, name: "config.toml"},
		{typ: unix.FAN_EVENT_INFO_TYPE_FID, htype: 1, handle: []byte{9, 10, 11, 12, 13, 14, 15, 16}},
	})
	var r record
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeRecord(buf, &r); err != nil {
			b.Fatal(err)
		}
	}
}
