// Package sessiontest builds a run's items by hand, for tests of the
// session that need no kernel and no root: records in, report out. A Run
// has a real project directory (under the test's temporary directory)
// with a config, so that paths are judged and the files at the end of
// the run looked at as a live run does; the test makes and removes the
// files there as the run it stands for would have.
//
//	r := sessiontest.New(t, "allow:\n  - tests/**\n")
//	r.Write(r.PID, ops.Open, "config.toml", sessiontest.Flags(unix.O_WRONLY|unix.O_TRUNC))
//	rep := r.Report()
package sessiontest

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/writewatch/writewatch/internal/allowlist"
	"github.com/writewatch/writewatch/internal/attribution"
	"github.com/writewatch/writewatch/internal/gobin"
	"github.com/writewatch/writewatch/internal/host"
	"github.com/writewatch/writewatch/internal/ops"
	"github.com/writewatch/writewatch/internal/session"
	"github.com/writewatch/writewatch/internal/witness"
	"github.com/writewatch/writewatch/report"
	"github.com/writewatch/writewatch/tracer"
)

// Run is one run's items, built by hand.
type Run struct {
	t testing.TB
	// Root is the project (the config's directory), Home the home
	// directory, both real directories; PID is COMMAND's process.
	Root, Home string
	PID        uint32
	// Config is the session's; a test may change it before Report.
	Config session.Config
	// End is what Report ends the run with (its Finished is set then).
	End session.End
	// Host answers the session's questions; nil: this machine
	// (host.Live, with the test functions GoFuncs gave).
	Host   host.Host
	items  []session.Item
	config string                      // the project's config, as New was given it
	funcs  map[uint32][]gobin.TestFunc // GoFuncs
	boot   uint64
	now    time.Time
	next   uint32 // the next pid Fork hands out
}

// New starts a run of COMMAND (sh) as process 100, in a project whose
// .writewatch.yaml is config (defaults off: only what it says is
// allowed), with the filesystem witness off.
func New(t testing.TB, config string) *Run {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := &Run{t: t, Root: filepath.Join(base, "proj"), Home: filepath.Join(base, "home"), PID: 100, next: 101,
		config: config, boot: uint64(time.Hour), now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	for _, d := range []string{filepath.Join(r.Root, "tests"), r.Home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	r.Config = session.Config{Mode: report.ModeGate, Command: []string{"sh", "-c", "tests"}, WorkDir: r.Root, Home: r.Home,
		Started: r.now, Allow: r.load(config+"\ndefaults: false\n", ""), InitialPIDNS: true, Roots: []string{r.Root, r.Home}}
	r.launch()
	return r
}

// load writes config as the project's .writewatch.yaml and loads it,
// COMMAND's TMPDIR being tmpdir.
func (r *Run) load(config, tmpdir string) *allowlist.List {
	r.t.Helper()
	cfg := filepath.Join(r.Root, ".writewatch.yaml")
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		r.t.Fatal(err)
	}
	getenv := func(name string) string {
		if name == "TMPDIR" {
			return tmpdir
		}
		return ""
	}
	list, err := allowlist.Load(allowlist.Options{ConfigPath: cfg, WorkDir: r.Root, Home: r.Home, Getenv: getenv})
	if err != nil {
		r.t.Fatal(err)
	}
	return list
}

// Defaults turns the built-in defaults on (go-cache allows nothing: no
// go is asked), with tmpdir as COMMAND's TMPDIR: a tmpdir above the
// project makes the project's carve-out (allowlist.SourceProject). Call
// it before the run's first item.
func (r *Run) Defaults(tmpdir string) {
	r.t.Helper()
	r.Config.Allow = r.load(r.config+"\n", tmpdir)
}

// launch starts the run: COMMAND (sh) as process r.PID.
func (r *Run) launch() {
	r.items = append(r.items, session.Item{Launched: &session.Launched{PID: r.PID, Launcher: 1}})
	r.Record(&tracer.Event{Kind: tracer.KindFork, TGID: r.PID, NSTGID: r.PID, PPID: 1, Flags: 1})
}

// Next starts the next run of the same project, with its config, an
// hour after r: its files are as r's run (and the test) left them.
func (r *Run) Next() *Run {
	n := &Run{t: r.t, Root: r.Root, Home: r.Home, PID: r.PID, next: r.PID + 1,
		boot: r.boot + uint64(time.Hour), now: r.now.Add(time.Hour)}
	n.Config = r.Config
	n.Config.Started = n.now
	n.launch()
	return n
}

// Path is p made absolute in the project.
func (r *Run) Path(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(r.Root, p)
}

// File makes file p (in the project, unless absolute) with content, as
// it is before the run or at its end.
func (r *Run) File(p, content string) {
	r.t.Helper()
	p = r.Path(p)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

// Remove removes p, as the end of the run finds it.
func (r *Run) Remove(p string) {
	r.t.Helper()
	if err := os.RemoveAll(r.Path(p)); err != nil {
		r.t.Fatal(err)
	}
}

// tick moves the run's clocks on, for the next item.
func (r *Run) tick() {
	r.boot += uint64(time.Millisecond)
	r.now = r.now.Add(time.Millisecond)
}

// Record adds a record, stamped now, in process pid's namespace as the
// initial one.
func (r *Run) Record(ev *tracer.Event) {
	r.tick()
	ev.BootNS, ev.Time = r.boot, r.now
	if ev.NSTGID == 0 {
		ev.NSTGID = ev.TGID
	}
	if ev.PID == 0 {
		ev.PID = ev.TGID
	}
	r.items = append(r.items, session.Item{Now: r.now, Boot: r.boot, Record: ev})
}

// Item adds an item of the run's own (a change, a barrier, a Go test
// binary, a reason the run is incomplete), stamped now.
func (r *Run) Item(it session.Item) {
	r.tick()
	it.Now, it.Boot, it.Time = r.now, r.boot, r.now
	r.items = append(r.items, it)
}

// Fork makes a child of parent and returns its pid.
func (r *Run) Fork(parent uint32) uint32 {
	pid := r.next
	r.next++
	r.Record(&tracer.Event{Kind: tracer.KindFork, TGID: pid, PPID: parent})
	return pid
}

// Exec runs program exe with args in pid.
func (r *Run) Exec(pid uint32, exe string, args ...string) {
	ev := &tracer.Event{Kind: tracer.KindExec, TGID: pid, Comm: []byte(filepath.Base(exe))}
	ev.SetSlot(tracer.SlotPath, []byte(exe+"\x00"))
	ev.SetSlot(tracer.SlotArgs, []byte(strings.Join(append([]string{exe}, args...), "\x00")+"\x00"))
	r.Record(ev)
}

// Exit ends pid.
func (r *Run) Exit(pid uint32) {
	r.Record(&tracer.Event{Kind: tracer.KindExit, TGID: pid})
}

// An Option sets a field of a write record.
type Option func(ev *tracer.Event)

// Flags are an open's flags, or a call's (AT_REMOVEDIR, MetaFollow...).
func Flags(f uint32) Option { return func(ev *tracer.Event) { ev.Flags = f } }

// Failed makes the call fail with errno.
func Failed(errno unix.Errno) Option { return func(ev *tracer.Event) { ev.Ret = -int32(errno) } }

// Created marks an open that created its file.
func Created() Option { return func(ev *tracer.Event) { ev.Created = true } }

// Prior is what the call found before it changed its file, as the
// kernel says where it can hook the VFS (tracer.Prior): a rename's
// target, a chmod's, chown's or utimes' file.
func Prior(p tracer.Prior) Option { return func(ev *tracer.Event) { ev.Prior = p } }

// PriorOf is Prior of what is at path (in the project unless absolute)
// now; nothing there is a rename's target that held no file.
func (r *Run) PriorOf(path string) Option {
	r.t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(r.Path(path), &st); err != nil {
		return Prior(tracer.Prior{Known: true})
	}
	return Prior(tracer.Prior{Known: true, Mode: st.Mode, UID: st.Uid, GID: st.Gid, MtimeSec: st.Mtim.Sec, MtimeNsec: uint32(st.Mtim.Nsec)})
}

// Killed is a write that enforcement refused (EACCES) and killed its
// process for, as the landlock tier does.
func Killed() Option {
	return func(ev *tracer.Event) {
		ev.Action, ev.Ret = tracer.ActionBlocked|tracer.ActionKilled, -int32(unix.EACCES)
	}
}

// Mode is a call's mode: mknod's file type and permissions, say.
func Mode(m uint32) Option { return func(ev *tracer.Event) { ev.Mode = m } }

// Device marks an open of a block device for writing, device dev (the
// kernel's dev_t, major << 20 | minor), whose node the allowlist does
// not name: tracer.Event.Device.
func Device(dev uint32) Option { return func(ev *tracer.Event) { ev.Device = dev } }

// OwnView marks a write by name of a process in a mount namespace of
// the tree's own where a mount was made, paused as the kernel pauses it,
// with the tree's count of mount calls then (tracer.Event.OwnView); nstgid
// is the process whose root (/proc/NSTGID/root) the path is followed
// through.
func OwnView(nstgid, mountCalls uint32) Option {
	return func(ev *tracer.Event) {
		ev.OwnView, ev.Paused, ev.NSTGID, ev.MountCalls = true, true, nstgid, mountCalls
	}
}

// Rewritten marks a write by name whose name changed in its process's
// memory while the call ran (tracer.Event.Rewritten).
func Rewritten() Option { return func(ev *tracer.Event) { ev.Rewritten = true } }

// InTest marks the write as made by a goroutine of Go test token's.
func InTest(token uint64) Option {
	return func(ev *tracer.Event) { ev.Test, ev.Go = token, tracer.GoProc|tracer.GoG|tracer.GoTest }
}

// Write adds a write record of op by pid on path (relative paths start
// in the project), and on path2 for a rename, a link or a symlink (whose
// path is the link's target). An open, or a call on a file that exists
// now, carries the file the kernel found, as it does.
func (r *Run) Write(pid uint32, op ops.Op, path string, opts ...Option) {
	r.t.Helper()
	r.write(pid, op, path, "", opts)
}

// Write2 is Write of a call with two paths: rename and link (old, new),
// symlink (target, link).
func (r *Run) Write2(pid uint32, op ops.Op, path, path2 string, opts ...Option) {
	r.t.Helper()
	r.write(pid, op, path, path2, opts)
}

func (r *Run) write(pid uint32, op ops.Op, path, path2 string, opts []Option) {
	ev := &tracer.Event{Kind: tracer.KindWrite, Op: op, TGID: pid, Comm: []byte("sh")}
	if op.Opens() {
		ev.Ret = 3
	}
	for _, o := range opts {
		o(ev)
	}
	slot(ev, tracer.SlotPath, tracer.SlotDir, path, r.Root)
	if path2 != "" {
		slot(ev, tracer.SlotPath2, tracer.SlotDir2, path2, r.Root)
	}
	if op.Opens() && ev.Ret >= 0 {
		abs := r.Path(path)
		ev.SetSlot(tracer.SlotResolved, dirSlot(abs))
		var st unix.Stat_t
		if unix.Stat(abs, &st) == nil {
			ev.Ino, ev.Dev = st.Ino, kernelDev(st.Dev)
		}
	}
	r.Record(ev)
}

// slot sets a path slot, with its start directory for a relative path.
func slot(ev *tracer.Event, ps, ds tracer.Slot, path, dir string) {
	ev.SetSlot(ps, []byte(path+"\x00"))
	if !filepath.IsAbs(path) {
		ev.SetSlot(ds, dirSlot(dir))
	}
}

// dirSlot is a directory as a record's directory slot holds it: its
// components innermost first, each NUL-terminated.
func dirSlot(dir string) []byte {
	var b []byte
	parts := strings.Split(strings.Trim(dir, "/"), "/")
	for i := len(parts) - 1; i >= 0; i-- {
		if parts[i] != "" {
			b = append(append(b, parts[i]...), 0)
		}
	}
	return b
}

// kernelDev is a device number stat gave, as the kernel's records give
// it (major << 20 | minor).
func kernelDev(dev uint64) uint32 { return unix.Major(dev)<<20 | unix.Minor(dev) }

// Read adds a read-only open, by pid, of file path, whose write record
// the kernel sent (a cross-test read, when another test wrote it).
func (r *Run) Read(pid uint32, path string, opts ...Option) {
	r.t.Helper()
	ev := &tracer.Event{Kind: tracer.KindRead, TGID: pid, Comm: []byte("sh")}
	for _, o := range opts {
		o(ev)
	}
	abs := r.Path(path)
	ev.SetSlot(tracer.SlotResolved, dirSlot(abs))
	var st unix.Stat_t
	if err := unix.Stat(abs, &st); err != nil {
		r.t.Fatalf("read of %s: %v (make the file first)", abs, err)
	}
	ev.Ino, ev.Dev = st.Ino, kernelDev(st.Dev)
	r.Record(ev)
}

// Announce adds a test-boundary announcement of pid's (docs/protocol.md):
// verb ("begin", "end", "result") with its query.
func (r *Run) Announce(pid uint32, verb, query string) {
	ev := &tracer.Event{Kind: tracer.KindWrite, Op: ops.Open, TGID: pid, Ret: -int32(unix.ENOTDIR), Flags: unix.O_WRONLY}
	ev.SetSlot(tracer.SlotPath, []byte(attribution.MarkerPrefix+"1/"+verb+"?"+query+"\x00"))
	r.Record(ev)
}

// GoTest makes pid a followed Go test binary of package pkg.
func (r *Run) GoTest(pid uint32, pkg string) {
	r.Item(session.Item{GoBinary: &session.GoBinary{TGID: pid, PID: int(pid), Package: pkg, Followed: true}})
}

// TestStart starts Go test name (its kernel token) in Go test binary pid;
// TestEnd ends it.
func (r *Run) TestStart(pid uint32, token uint64, name string) {
	ev := &tracer.Event{Kind: tracer.KindTestStart, TGID: pid, Test: token, Go: tracer.GoProc | tracer.GoG | tracer.GoTest}
	ev.SetSlot(tracer.SlotPath, []byte(name+"\x00"))
	r.Record(ev)
}

// TestEnd ends Go test token in pid.
func (r *Run) TestEnd(pid uint32, token uint64) {
	r.Record(&tracer.Event{Kind: tracer.KindTestEnd, TGID: pid, Test: token, Go: tracer.GoProc | tracer.GoG | tracer.GoTest})
}

// GoFuncs are the test functions the line table of Go test binary pid
// holds (host.Host.GoTestFuncs), each at a line of its own in
// x_test.go.
func (r *Run) GoFuncs(pid uint32, names ...string) {
	if r.funcs == nil {
		r.funcs = map[uint32][]gobin.TestFunc{}
	}
	for i, n := range names {
		r.funcs[pid] = append(r.funcs[pid], gobin.TestFunc{Name: n, File: r.Path("x_test.go"), Line: 10 * (i + 1)})
	}
}

// Witness turns the filesystem witness on; Change then adds what it saw.
func (r *Run) Witness() { r.Config.Witness = true }

// Change adds a change the witness saw pid make at path.
func (r *Run) Change(pid uint32, op witness.Op, path string) {
	abs := r.Path(path)
	r.Item(session.Item{Change: &witness.Event{Pid: int32(pid), Op: op, Path: abs, Name: filepath.Base(abs)}})
}

// Items are the items so far.
func (r *Run) Items() []session.Item { return r.items }

// Report replays the items into a session, with the host this machine
// (the project's files as the test left them), and returns the report,
// its exit code the verdict's.
func (r *Run) Report() *report.Report {
	r.t.Helper()
	var h host.Host = host.Live{Funcs: func(tgid uint32) ([]gobin.TestFunc, error) {
		if f, ok := r.funcs[tgid]; ok {
			return f, nil
		}
		return nil, errors.New("no test functions given (GoFuncs)")
	}}
	if r.Host != nil {
		h = r.Host
	}
	s, err := session.New(r.Config, h)
	if err != nil {
		r.t.Fatal(err)
	}
	for i := range r.items {
		s.Handle(&r.items[i])
	}
	r.tick()
	r.End.Finished = r.now
	rep := s.Finish(r.End)
	rep.ExitCode = rep.Verdict(rep.Mode == report.ModeAudit, false)
	return rep
}

// Violation is the report's violation of op at path (in the project
// unless absolute), or nil.
func Violation(rep *report.Report, op, path string) *report.Violation {
	for i := range rep.Violations {
		if v := &rep.Violations[i]; v.Op == op && (v.Path == path || strings.HasSuffix(v.Path, "/"+path)) {
			return v
		}
	}
	return nil
}
