// Package tracer loads writewatch's BPF programs, follows one process
// tree in the kernel and hands its write, exec, fork and exit records to
// the caller.
//
// Ids follow the kernel's terms (see bpf/writewatch.h): a pid is one
// thread, a tgid is a process as ps shows it. Processes are keyed by their
// tgid in the initial PID namespace; NSTGID is the same process as
// writewatch's own PID namespace numbers it.
package tracer

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"

	"github.com/writewatch/writewatch/internal/ops"
	"github.com/writewatch/writewatch/internal/phases"
)

// ErrPermission means the kernel refused to load or attach the programs
// for lack of privileges.
var ErrPermission = errors.New("not permitted to load BPF programs")

// ErrUnsupported means this kernel lacks something writewatch needs.
var ErrUnsupported = errors.New("kernel lacks a feature writewatch needs")

// ErrClosed is returned by Next once the tracer is closed.
var ErrClosed = errors.New("tracer closed")

// ErrTimeout is returned by Next when the deadline passed with no record.
var ErrTimeout = errors.New("no record before the deadline")

// Options tune a Tracer.
type Options struct {
	// RingBufferBytes is the size of the kernel-to-user ring buffer, a
	// power of two multiple of the page size. 0 means 8 MiB.
	RingBufferBytes uint32
	// IgnoreMetadata leaves chmod, chown, utimes, xattr and inode flag changes out.
	IgnoreMetadata bool
	// Marks let the kernel recognise allowed writes and keep them from
	// user space. A write is dropped in the kernel only when every path
	// it touches lies under a MarkAllow inode and under no MarkDeny one.
	Marks []Mark
	// MarksLater, when not nil, gives the marks instead of Marks, once
	// the programs are loaded: the marks may wait on something slow (go
	// env, for the go-cache default of the allowlist) that the load then
	// overlaps. Marks more than the marks map holds by default make New
	// load the programs again, with the map sized for them.
	MarksLater func() []Mark
	// FollowGoTests pauses each program of the tree whose file name ends
	// in ".test" at exec (SIGSTOP from the kernel), so that FollowGoTest
	// can attach its uprobes before it runs; the KindExec record then has
	// ExecStopped set.
	FollowGoTests bool
	// GoTestsEarly says COMMAND is likely to run Go test binaries: the
	// programs that follow them then load in the background from New on,
	// instead of when the first one is paused.
	GoTestsEarly bool
	// Enforce, when set, makes the kernel enforce the marks (see
	// EnforceOptions); the marks must then be the grants of the plan.
	Enforce *EnforceOptions
}

// EnforceOptions make the kernel enforce the allowlist. A write is
// allowed when every path it touches is under a MarkAllow inode and under
// no MarkDeny one, or, judged as a string before the call, is an
// absolute path under one of Prefixes or equal to one of Exact.
type EnforceOptions struct {
	// Tier names how the programs enforce: the value of WW_TIER_<TIER>
	// (upper case) in enum ww_tier, bpf/writewatch.h.
	Tier string
	// LSM loads and attaches the BPF LSM programs (bpf/enforce.bpf.c),
	// which refuse the writes of the tree that are not allowed.
	LSM bool
	// Kill sends SIGKILL to the writer of a write that is not allowed.
	Kill bool
	// MetadataGuarded says COMMAND runs under the metadata guard
	// (package metaguard), which refuses metadata changes outside the
	// grants before they run: the kernel then reports those it refused
	// instead of judging metadata changes at their entry.
	MetadataGuarded bool
	// NoIOURing: with MetadataGuarded, the guard's filter also makes
	// io_uring_setup fail (ENOSYS), for a tier that cannot refuse the
	// extended-attribute requests of an io_uring (Landlock).
	NoIOURing bool
	// Prefixes are directories, each ending in "/", everything under
	// which is allowed; Exact are paths allowed themselves. Entries
	// longer than PrefixMax bytes are refused.
	Prefixes, Exact []string
}

// PrefixMax is the longest prefix the kernel keeps.
const PrefixMax = int(unsafe.Sizeof(writewatchPrefixKey{}.Data)) - 1

// Actions say what enforcement did about a write (enum ww_action bits).
const (
	ActionBlocked = uint32(writewatchWwActionWW_ACT_BLOCKED) // the kernel refused the call
	ActionKilled  = uint32(writewatchWwActionWW_ACT_KILLED)  // the writer was sent SIGKILL
)

// MarkKind says what a Mark means.
type MarkKind uint32

const (
	MarkAllow = MarkKind(writewatchWwMarkWW_MARK_ALLOW) // allowed, with everything under it
	MarkDeny  = MarkKind(writewatchWwMarkWW_MARK_DENY)  // user space must decide at or under it
	// MarkFinal goes with MarkAllow when no deny mark lies above it:
	// reaching it settles a write without looking further up.
	MarkFinal = MarkKind(writewatchWwMarkWW_MARK_FINAL)
)

// Mark names an inode by the device and inode number stat reports.
type Mark struct {
	Dev  uint64 // st_dev
	Ino  uint64
	Kind MarkKind
}

// Tracer is one loaded and attached set of writewatch programs.
type Tracer struct {
	objs   writewatchObjects
	lsm    *enforceObjects // the LSM tier's programs, when loaded
	links  []link.Link
	rd     *ringbuf.Reader
	rec    ringbuf.Record
	offset int64 // wall clock minus CLOCK_BOOTTIME, in ns

	gotests   map[uint32]*goTest         // followed Go test binaries, by tgid
	prepared  map[fileID]*preparedGoTest // Go test binaries' files readied (PrepareGoTest)
	preparing sync.WaitGroup             // PrepareGoTest's attaches under way
	detaching sync.WaitGroup             // uprobes being closed
	multi     bool                       // Go test uprobes are uprobe_multi links

	// The Go test uprobe programs load in the background (loadGoTests):
	// goReady closes once they are in objs, or goErr says why not.
	goReady chan struct{}
	goErr   error
	goOnce  sync.Once // runs goStart, or goDrop when Close comes first
	goStart func()
	goDrop  func()
	mu      sync.Mutex // guards objs's programs against Close while they load
	closed  bool

	// The io_uring program loads in the background outside --enforce
	// (loadURingLater): uringReady closes once it is attached, or could
	// not be (unwatched says why). uringLink is its link, guarded by mu.
	uringReady chan struct{}
	uringLink  link.Link

	closeOnce sync.Once

	// unwatched says what the tracer could not attach on this kernel,
	// each a reason the run is incomplete (Stats.Unwatched).
	unwatched []string
}

// goTestObjects are the Go test uprobe program.
type goTestObjects struct {
	GoProbe *ebpf.Program `ebpf:"go_probe"`
}

// New checks the kernel, loads the programs and attaches them. The
// returned Tracer follows no process until Track is called.
func New(opts Options) (*Tracer, error) {
	if err := Preflight(); err != nil {
		return nil, err
	}
	end := phases.Start("tracer: object, heavy maps")
	spec, heavy, err := spec(opts.GoTestsEarly)
	end()
	if err != nil {
		return nil, fmt.Errorf("parse BPF object: %w", err)
	}
	if err := configure(spec, opts); err != nil {
		closeMaps(heavy)
		return nil, err
	}
	// The heavy maps, when Warm did not make them, are made concurrently;
	// those it made for other options, again.
	if heavy == nil {
		heavy, err = makeMaps(spec, heavyMaps)
	} else {
		err = remakeChanged(spec, heavy)
	}
	if err != nil {
		closeMaps(heavy)
		return nil, classify("load BPF programs", err)
	}
	defer closeMaps(heavy) // the collection holds clones

	t := &Tracer{offset: bootOffset(), gotests: map[uint32]*goTest{}, prepared: map[fileID]*preparedGoTest{},
		goReady: make(chan struct{}), uringReady: make(chan struct{})}
	t.probeMulti(spec)
	// Under --enforce, the io_uring program's kill tier refuses requests
	// from the first: it is loaded with the others.
	uringLater := opts.Enforce == nil
	end = phases.Start("tracer: load programs")
	err = loadCore(spec, heavy, &t.objs, !uringLater)
	end()
	if err != nil {
		return nil, classify("load BPF programs", err)
	}
	if err := t.loadURingLater(spec, uringLater); err != nil {
		t.Close()
		return nil, err
	}
	marks := opts.Marks
	if opts.MarksLater != nil {
		end := phases.Start("tracer: wait for the marks")
		marks = opts.MarksLater()
		end()
		if uint32(len(marks)) > t.objs.Marks.MaxEntries() {
			t.Close()
			opts.Marks, opts.MarksLater = marks, nil
			return New(opts)
		}
	}
	if err := t.setMarks(marks); err != nil {
		t.Close()
		return nil, err
	}
	if e := opts.Enforce; e != nil {
		if err := t.setPrefixes(e.Prefixes, e.Exact); err != nil {
			t.Close()
			return nil, err
		}
	}
	end = phases.Start("tracer: attach")
	err = t.attach(!uringLater)
	end()
	if err != nil {
		t.Close()
		return nil, err
	}
	if e := opts.Enforce; e != nil && e.LSM {
		end := phases.Start("tracer: LSM programs")
		err := t.loadLSM(e.Kill)
		end()
		if err != nil {
			t.Close()
			return nil, err
		}
	}
	if t.rd, err = ringbuf.NewReader(t.objs.Events); err != nil {
		t.Close()
		return nil, fmt.Errorf("open ring buffer: %w", err)
	}
	if err := t.loadGoTests(spec, opts.GoTestsEarly); err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

// probeMulti makes the Go test uprobes of spec uprobe_multi links (Linux
// 6.6) when the kernel has them: closing one costs one RCU grace period,
// while closing perf-event uprobes is serialized, one grace period each.
// Loading does not tell: older kernels load such programs and refuse
// only their links, so the kernel is asked with a trial link.
func (t *Tracer) probeMulti(spec *ebpf.CollectionSpec) {
	end := phases.Start("tracer: probe uprobe_multi")
	t.multi = features.HaveBPFLinkUprobeMulti() == nil
	end()
	if t.multi {
		for _, p := range spec.Programs {
			if strings.HasPrefix(p.SectionName, "uprobe/") {
				p.AttachType = ebpf.AttachTraceUprobeMulti
			}
		}
	}
}

// loadCore loads into objs the maps and the programs attached at once:
// all but the Go test uprobe programs, and the io_uring one unless
// uring. The maps are made first, the heavy ones given; then the
// programs load in two sets at the same time, with those maps: the
// kernel verifies a program in the thread that loads it. sys_exit costs
// the verifier about as much as sys_enter and the sched programs
// together; with uring_submit (under --enforce), sys_exit and the sched
// programs cost about as much as sys_enter and uring_submit
// (docs/performance.md#start-up).
func loadCore(spec *ebpf.CollectionSpec, heavy map[string]*ebpf.Map, objs *writewatchObjects, uring bool) error {
	// Every map of the object, the data sections (.rodata, .bss) too, so
	// that both sets share them.
	mapsOnly := *spec
	mapsOnly.Programs = nil
	end := phases.Start("tracer: maps")
	maps, err := ebpf.NewCollectionWithOptions(&mapsOnly, ebpf.CollectionOptions{MapReplacements: heavy, Cache: kernelBTF})
	end()
	if err != nil {
		return err
	}
	defer maps.Close() // the programs and core hold their own references
	// The programs' relocations need the kernel's BTF, which Warm may
	// still be reading; the maps did not.
	end = phases.Start("tracer: kernel BTF")
	_, err = kernelBTF.Kernel()
	end()
	if err != nil {
		return fmt.Errorf("read the kernel's BTF: %w", err)
	}
	var exit struct {
		SysExit *ebpf.Program `ebpf:"sys_exit"`
	}
	var enter struct {
		SysEnter *ebpf.Program `ebpf:"sys_enter"`
	}
	var sched struct {
		SchedExec *ebpf.Program `ebpf:"sched_exec"`
		SchedExit *ebpf.Program `ebpf:"sched_exit"`
		SchedFork *ebpf.Program `ebpf:"sched_fork"`
	}
	var uringProg uringObjects
	first, second := []any{&exit}, []any{&enter, &sched}
	if uring {
		first, second = []any{&exit, &sched}, []any{&enter, &uringProg}
	}
	opts := &ebpf.CollectionOptions{MapReplacements: maps.Maps, Cache: kernelBTF}
	load := func(phase string, set []any) (err error) {
		defer phases.Start(phase)()
		for _, o := range set {
			if err = spec.LoadAndAssign(o, opts); err != nil {
				return err
			}
		}
		return nil
	}
	var firstErr error
	var wg sync.WaitGroup
	wg.Go(func() { firstErr = load("tracer: load sys_exit's set", first) })
	secondErr := load("tracer: load sys_enter's set", second)
	wg.Wait()
	err = errors.Join(firstErr, secondErr)
	if err == nil {
		err = maps.Assign(&objs.writewatchMaps)
	}
	if err != nil {
		for _, p := range []*ebpf.Program{exit.SysExit, sched.SchedExec, sched.SchedExit, sched.SchedFork, enter.SysEnter, uringProg.UringSubmit} {
			if p != nil {
				p.Close()
			}
		}
		return err
	}
	p := &objs.writewatchPrograms
	p.SchedExec, p.SchedExit, p.SchedFork, p.SysExit = sched.SchedExec, sched.SchedExit, sched.SchedFork, exit.SysExit
	p.SysEnter, p.UringSubmit = enter.SysEnter, uringProg.UringSubmit
	return nil
}

// configure sizes spec's maps for opts and sets its constants.
func configure(spec *ebpf.CollectionSpec, opts Options) error {
	if opts.RingBufferBytes != 0 {
		spec.Maps["events"].MaxEntries = opts.RingBufferBytes
	}
	ringBytes := spec.Maps["events"].MaxEntries
	// The marks and the allowed prefixes take as many entries as given.
	if n := uint32(len(opts.Marks)); n > spec.Maps["marks"].MaxEntries {
		spec.Maps["marks"].MaxEntries = n
	}
	if e := opts.Enforce; e != nil {
		if n := uint32(len(e.Prefixes) + len(e.Exact)); n > spec.Maps["prefixes"].MaxEntries {
			spec.Maps["prefixes"].MaxEntries = n
		}
	}
	sizeGoroutines(spec, opts.GoTestsEarly)
	consts := map[string]any{
		"use_marks":      len(opts.Marks) > 0 || opts.MarksLater != nil || opts.Enforce != nil,
		"watch_metadata": !opts.IgnoreMetadata,
		"wakeup_bytes":   uint64(ringBytes / 8),
		"direct_loads":   directLoads(),
	}
	if opts.FollowGoTests {
		consts["follow_go_tests"] = uint32(1)
	}
	if e := opts.Enforce; e != nil {
		tier, err := enumValue(spec, "ww_tier", "WW_TIER_"+strings.ToUpper(e.Tier))
		if err != nil {
			return err
		}
		consts["enforce_tier"] = tier
		consts["enforce_kill"] = e.Kill
		consts["meta_guard"] = e.MetadataGuarded
	}
	for name, v := range consts {
		if err := spec.Variables[name].Set(v); err != nil {
			return fmt.Errorf("set %s: %w", name, err)
		}
	}
	if dev, ino, ok := pidNamespace(); ok {
		if err := spec.Variables["pidns_dev"].Set(dev); err != nil {
			return fmt.Errorf("set pidns_dev: %w", err)
		}
		if err := spec.Variables["pidns_ino"].Set(ino); err != nil {
			return fmt.Errorf("set pidns_ino: %w", err)
		}
	}
	return nil
}

// loadGoTests readies the Go test uprobe programs, with this tracer's
// maps. Only a run that execs a Go test binary needs them, and the kernel
// pauses that binary at exec until FollowGoTest has attached them
// (FollowGoTests), so they stay off the path to COMMAND's start: when
// early, they load in the background from now on; otherwise when the
// first test binary comes (FollowGoTest), and never in a run without one.
// The maps are cloned here, so that Close may close its own while the
// programs load.
func (t *Tracer) loadGoTests(spec *ebpf.CollectionSpec, early bool) error {
	maps, err := t.cloneMaps()
	if err != nil {
		return err
	}
	load := func() {
		defer close(t.goReady)
		var g goTestObjects
		t.loadLater("tracer: Go test programs", spec, &g, maps, func(err error) {
			if err != nil {
				t.goErr = classify("load the Go test uprobe programs", err)
				return
			}
			t.objs.GoProbe = g.GoProbe
		})
	}
	t.goStart = func() { go load() }
	t.goDrop = func() {
		closeMaps(maps)
		t.goErr = ErrClosed
		close(t.goReady)
	}
	if early {
		t.goOnce.Do(t.goStart)
	}
	return nil
}

func (g *goTestObjects) close() { g.GoProbe.Close() }

// laterSet is a set of programs that loads in the background.
type laterSet interface{ close() }

// loadLater loads set from spec with maps, clones of this tracer's maps,
// which it closes, and then, with t.mu held, calls done with the load's
// error; unless Close came first, when it closes what loaded instead.
// Phase names the load in WRITEWATCH_PHASES.
func (t *Tracer) loadLater(phase string, spec *ebpf.CollectionSpec, set laterSet, maps map[string]*ebpf.Map, done func(error)) {
	defer closeMaps(maps)
	end := phases.Start(phase)
	err := spec.LoadAndAssign(set, &ebpf.CollectionOptions{MapReplacements: maps, Cache: kernelBTF})
	end()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		if err == nil {
			set.close()
		}
		return
	}
	done(err)
}

// attach hooks the programs to their tracepoints, the io_uring one too
// when uring (otherwise loadURingLater does). These attach like raw
// tracepoints: no tracefs is needed, and detaching does not wait for the
// kernel to quiesce each one, so start and end stay fast. Process
// lifecycle comes first, so no child of a tracked process is missed once
// syscalls are watched.
func (t *Tracer) attach(uring bool) error {
	// BTF-typed tracepoints: arguments are read with plain loads, and
	// per-thread state lives in task storage.
	for _, prog := range []*ebpf.Program{t.objs.SchedFork, t.objs.SchedExec, t.objs.SchedExit, t.objs.SysExit, t.objs.SysEnter} {
		l, err := link.AttachTracing(link.TracingOptions{Program: prog})
		if err != nil {
			return classify("attach "+prog.String(), err)
		}
		t.links = append(t.links, l)
	}
	if !uring {
		return nil
	}
	defer close(t.uringReady)
	return t.attachURing()
}

// loadLSM loads the LSM tier's programs (bpf/enforce.bpf.c) with this
// tracer's maps, so they judge the same tree by the same marks, and
// attaches them.
func (t *Tracer) loadLSM(kill bool) error {
	spec, err := loadEnforce()
	if err != nil {
		return fmt.Errorf("parse BPF LSM object: %w", err)
	}
	if err := spec.Variables["enforce_kill"].Set(kill); err != nil {
		return fmt.Errorf("set enforce_kill: %w", err)
	}
	if err := spec.Variables["direct_loads"].Set(directLoads()); err != nil {
		return fmt.Errorf("set direct_loads: %w", err)
	}
	spec.Maps["marks"].MaxEntries = t.objs.Marks.MaxEntries() // sized by New
	// Before Linux 6.2, POSIX ACLs are set through inode_setxattr, and
	// there is no inode_set_acl: its program is then loaded on the other
	// hook, which takes the same first arguments, and not attached.
	setACL := hasLSMHook("inode_set_acl")
	if !setACL {
		spec.Programs["ww_inode_set_acl"].AttachTo = "inode_setxattr"
	}
	t.lsm = &enforceObjects{}
	err = spec.LoadAndAssign(t.lsm, &ebpf.CollectionOptions{MapReplacements: map[string]*ebpf.Map{
		"tasks": t.objs.Tasks, "marks": t.objs.Marks, "dir_verdicts": t.objs.DirVerdicts, "stats": t.objs.Stats,
		"uring_xattrs": t.objs.UringXattrs,
	}, Cache: kernelBTF})
	if err != nil {
		t.lsm = nil
		return classify("load BPF LSM programs", err)
	}
	p := &t.lsm.enforcePrograms
	progs := []*ebpf.Program{p.WwFileOpen, p.WwPathTruncate, p.WwPathUnlink, p.WwPathRmdir,
		p.WwPathMkdir, p.WwPathMknod, p.WwPathSymlink, p.WwPathLink, p.WwPathRename, p.WwInodeSetxattr}
	if setACL {
		progs = append(progs, p.WwInodeSetAcl)
	}
	for _, prog := range progs {
		l, err := link.AttachLSM(link.LSMOptions{Program: prog})
		if err != nil {
			return classify("attach BPF LSM program", err)
		}
		t.links = append(t.links, l)
	}
	return nil
}

// hasLSMHook reports whether the kernel has the LSM hook name, by its
// BPF attachment point in the kernel's BTF.
func hasLSMHook(name string) bool { return hasKernelFunc("bpf_lsm_" + name) }

// hasKernelFunc says whether the kernel's BTF has the function name.
func hasKernelFunc(name string) bool {
	spec, err := kernelBTF.Kernel()
	if err != nil {
		return false
	}
	var fn *btf.Func
	return spec.TypeByName(name, &fn) == nil
}

// directLoads is the setting direct_loads (bpf/lib/kread.h) of both
// objects: whether the kernel has the kfunc bpf_rdonly_cast (Linux 6.2).
func directLoads() bool { return hasKernelFunc("bpf_rdonly_cast") }

// setPrefixes fills the allowed-prefix trie: a directory as "DIR/", a path
// allowed itself with its NUL, so that it matches only itself.
func (t *Tracer) setPrefixes(dirs, exact []string) error {
	keys := make([]writewatchPrefixKey, 0, len(dirs)+len(exact))
	put := func(s string) {
		var key writewatchPrefixKey
		if len(s) > len(key.Data) {
			return // refused: the kernel keeps no longer prefix
		}
		for i := range len(s) {
			key.Data[i] = int8(s[i])
		}
		key.Prefixlen = uint32(8 * len(s))
		keys = append(keys, key)
	}
	for _, d := range dirs {
		put(d)
	}
	for _, p := range exact {
		put(p + "\x00")
	}
	values := make([]uint32, len(keys))
	for i := range values {
		values[i] = 1
	}
	if err := batchUpdate(t.objs.Prefixes, keys, values); err != nil {
		return fmt.Errorf("set allowed prefixes: %w", err)
	}
	return nil
}

// setMarks fills the marks map, the kinds of marks on one inode or'ed
// together.
func (t *Tracer) setMarks(marks []Mark) error {
	kinds := make(map[writewatchInodeKey]uint32, len(marks))
	for _, m := range marks {
		kinds[writewatchInodeKey{Ino: m.Ino, Dev: kernelDev(m.Dev)}] |= uint32(m.Kind)
	}
	keys := make([]writewatchInodeKey, 0, len(kinds))
	values := make([]uint32, 0, len(kinds))
	for k, v := range kinds {
		keys = append(keys, k)
		values = append(values, v)
	}
	if err := batchUpdate(t.objs.Marks, keys, values); err != nil {
		return fmt.Errorf("set marks: %w", err)
	}
	return nil
}

// batchUpdate puts keys and values into m, in batches where the kernel
// takes them, else one by one.
func batchUpdate[K, V any](m *ebpf.Map, keys []K, values []V) error {
	const chunk = 1 << 14
	for len(keys) > 0 {
		n := min(len(keys), chunk)
		_, err := m.BatchUpdate(keys[:n], values[:n], nil)
		if errors.Is(err, ebpf.ErrNotSupported) {
			for i := range keys {
				if err := m.Update(keys[i], values[i], ebpf.UpdateAny); err != nil {
					return err
				}
			}
			return nil
		}
		if err != nil {
			return err
		}
		keys, values = keys[n:], values[n:]
	}
	return nil
}

// kernelDev converts a dev_t as stat reports it to the kernel's own
// encoding (major << 20 | minor), the one struct super_block holds.
func kernelDev(dev uint64) uint32 {
	return unix.Major(dev)<<20 | unix.Minor(dev)
}

// statDev is kernelDev's inverse.
func statDev(dev uint32) uint64 {
	return unix.Mkdev(dev>>20, dev&(1<<20-1))
}

// Arm makes the next process this process forks the root of the traced
// tree: the kernel adds it at fork, before it runs an instruction, and its
// descendants after it. Call Disarm once it is started.
func (t *Tracer) Arm() error {
	if err := t.objs.Launcher.Update(uint32(0), uint32(os.Getpid()), ebpf.UpdateAny); err != nil {
		return fmt.Errorf("arm launcher: %w", err)
	}
	return nil
}

// Disarm stops adding this process's children to the tree.
func (t *Tracer) Disarm() error {
	if err := t.objs.Launcher.Update(uint32(0), uint32(0), ebpf.UpdateAny); err != nil {
		return fmt.Errorf("disarm launcher: %w", err)
	}
	return nil
}

// Tracked lists the processes of the tree that are alive now.
func (t *Tracer) Tracked() ([]uint32, error) {
	var (
		key  uint32
		val  writewatchProc
		tids []uint32
	)
	it := t.objs.Procs.Iterate()
	for it.Next(&key, &val) {
		tids = append(tids, key)
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("list tracked processes: %w", err)
	}
	return tids, nil
}

// IsTracked reports whether the kernel counts process tgid (initial PID
// namespace) in the tree now: from its fork, before it ran, to its exit.
func (t *Tracer) IsTracked(tgid uint32) bool {
	var val writewatchProc
	return t.objs.Procs.Lookup(&tgid, &val) == nil
}

// SetDeadline makes Next return ErrTimeout once t has passed and no record
// is waiting. A zero time waits forever.
func (t *Tracer) SetDeadline(d time.Time) { t.rd.SetDeadline(d) }

// Wake makes a Next that is waiting return ErrTimeout once the records
// already in the ring buffer are read. Records do not wake the reader one
// by one, so a caller that learns something (COMMAND exited, a signal)
// calls Wake instead of waiting for its deadline.
func (t *Tracer) Wake() error {
	if err := t.rd.Flush(); err != nil {
		return fmt.Errorf("wake reader: %w", err)
	}
	return nil
}

// Next reads the next record into ev. ev's byte slices point into a buffer
// reused by the following call.
func (t *Tracer) Next(ev *Event) error {
	if err := t.rd.ReadInto(&t.rec); err != nil {
		switch {
		case errors.Is(err, ringbuf.ErrClosed):
			return ErrClosed
		case errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, ringbuf.ErrFlushed):
			return ErrTimeout
		}
		return fmt.Errorf("read ring buffer: %w", err)
	}
	if err := ev.decode(t.rec.RawSample); err != nil {
		return err
	}
	if ev.Kind == KindContents && ev.Why == WhyIOURing {
		// Its process is paused until the io_uring program is attached:
		// the caller resumes it once it has this record.
		t.WaitURing()
	}
	ev.Time = time.Unix(0, int64(ev.BootNS)+t.offset)
	return nil
}

// Repeats calls fn for every write the kernel counted instead of sending
// again, with how many times it was repeated since it was sent.
func (t *Tracer) Repeats(fn func(k RepeatKey, n uint64)) error {
	var (
		key writewatchRepeatKey
		n   uint64
	)
	it := t.objs.Repeats.Iterate()
	for it.Next(&key, &n) {
		if n > 0 {
			fn(RepeatKey{Ino: key.Ino, Dev: key.Dev, Gen: key.Gen, TGID: key.Tgid, Op: ops.Op(key.Op), Flags: key.Flags, Test: key.Test, Epoch: key.Epoch}, n)
		}
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("read repeats: %w", err)
	}
	return nil
}

// Stats sums the kernel's per-CPU counters.
func (t *Tracer) Stats() (Stats, error) {
	t.mu.Lock()
	s := Stats{Unwatched: slices.Clone(t.unwatched)}
	t.mu.Unlock()
	fields := [writewatchWwStatWW_STAT_MAX]*uint64{
		writewatchWwStatWW_STAT_EVENTS:            &s.Events,
		writewatchWwStatWW_STAT_RINGBUF_FULL:      &s.RingbufFull,
		writewatchWwStatWW_STAT_PROC_FULL:         &s.ProcMapFull,
		writewatchWwStatWW_STAT_TRUNCATED:         &s.Truncated,
		writewatchWwStatWW_STAT_READ_ERR:          &s.ReadErrors,
		writewatchWwStatWW_STAT_ALLOWED:           &s.AllowedInKernel,
		writewatchWwStatWW_STAT_NOT_FILES:         &s.NotFiles,
		writewatchWwStatWW_STAT_REPEATS:           &s.Repeats,
		writewatchWwStatWW_STAT_LOST_WRITES:       &s.LostWrites,
		writewatchWwStatWW_STAT_GOROUTINE_FULL:    &s.GoroutineMapFull,
		writewatchWwStatWW_STAT_STOP_ERR:          &s.StopErrors,
		writewatchWwStatWW_STAT_KILLED:            &s.Killed,
		writewatchWwStatWW_STAT_BLOCKED:           &s.Blocked,
		writewatchWwStatWW_STAT_SIGNAL_ERR:        &s.SignalErrors,
		writewatchWwStatWW_STAT_UNMARKED:          &s.Unmarked,
		writewatchWwStatWW_STAT_READS:             &s.Reads,
		writewatchWwStatWW_STAT_READ_REPEATS:      &s.ReadRepeats,
		writewatchWwStatWW_STAT_WRITTEN_FULL:      &s.WrittenFull,
		writewatchWwStatWW_STAT_READS_FULL:        &s.ReadsFull,
		writewatchWwStatWW_STAT_OUTSIDE_TRACED:    &s.OutsideTraced,
		writewatchWwStatWW_STAT_FANOTIFY_WRITABLE: &s.FanotifyWritable,
		writewatchWwStatWW_STAT_CONTENTS_STOP_ERR: &s.ContentsStopErrors,
		writewatchWwStatWW_STAT_UNWATCHED_ALLOWED: &s.UnwatchedAllowed,
		writewatchWwStatWW_STAT_URING_UNWATCHED:   &s.URingUnwatched,
		writewatchWwStatWW_STAT_LOST_READS:        &s.LostReads,
	}
	for i := range uint32(writewatchWwStatWW_STAT_MAX) {
		var per []uint64
		if err := t.objs.Stats.Lookup(i, &per); err != nil {
			return s, fmt.Errorf("read stats: %w", err)
		}
		for _, v := range per {
			*fields[i] += v
		}
	}
	return s, nil
}

// Stats are the kernel side's counters.
type Stats struct {
	// Programs are the kernel's counts for each program (ProgramStats):
	// filled in by the caller, at the end of a run.
	Programs    []ProgramStat
	Events      uint64 // write records sent
	RingbufFull uint64 // records dropped: ring buffer full
	ProcMapFull uint64 // threads or processes not followed: storage or map full
	Truncated   uint64 // path slots cut to fit
	ReadErrors  uint64 // strings the kernel could not read
	// AllowedInKernel counts write events the kernel found allowed by
	// the marks and did not send.
	AllowedInKernel uint64
	// NotFiles counts opens of pipes, sockets, memfds and the like.
	NotFiles uint64
	// Repeats counts writes counted in the repeats map, not sent.
	Repeats uint64
	// LostWrites is the part of RingbufFull that were write records.
	LostWrites uint64
	// LostReads is the part of RingbufFull that were read records (reads
	// of files the run wrote): cross-test reads that may not be listed.
	LostReads uint64
	// GoroutineMapFull counts goroutines whose test could not be
	// recorded: their writes are reported as ambiguous, never misnamed.
	GoroutineMapFull uint64
	// StopErrors counts Go test binaries the kernel could not pause at
	// exec: their first tests may be reported as ambiguous.
	StopErrors uint64

	Killed       uint64 // SIGKILLs sent by enforcement
	Blocked      uint64 // writes refused, as seen at sys_exit (Landlock) or by the LSM programs
	SignalErrors uint64 // SIGKILLs that could not be sent
	// Unmarked counts refusals by the LSM programs of syscalls
	// writewatch does not record (ftruncate, ...).
	Unmarked uint64

	// Reads counts KindRead records sent: read-only opens of a file the
	// run wrote; ReadRepeats the same reads again, counted, not sent.
	Reads, ReadRepeats uint64
	// WrittenFull counts written files the kernel could not add to the
	// set it checks reads against (map full): reads of them go unseen.
	WrittenFull uint64
	// ReadsFull counts reads whose repeats could not be counted (map
	// full): they are sent again, nothing is lost.
	ReadsFull uint64
	// OutsideTraced counts the calls by which a process of the tree
	// became the tracer of a process outside it (ptrace PTRACE_ATTACH,
	// PTRACE_SEIZE) or wrote into its memory (process_vm_writev).
	OutsideTraced uint64
	// FanotifyWritable counts fanotify groups the tree made whose event
	// descriptors are open for writing: writes through them are seen
	// neither by a record nor by the filesystem witness.
	FanotifyWritable uint64
	// ContentsStopErrors counts processes that asked for file contents
	// to be watched (KindContents) and that the kernel could not pause
	// until they were: they ran on while the witness did not watch them.
	ContentsStopErrors uint64
	// UnwatchedAllowed counts the writes of AllowedInKernel that
	// Event.Unwatched would mark (bpf/lib/contents.h, unwatched_write):
	// where their paths led cannot be told.
	UnwatchedAllowed uint64
	// URingUnwatched counts the io_uring calls of the tree, before the
	// io_uring program was attached (it loads beside COMMAND's start),
	// whose requests it may not have seen: an io_uring_enter that
	// submitted some, or an io_uring_setup whose process could not be
	// paused until then (bpf/lib/contents.h).
	URingUnwatched uint64

	// Unwatched says what the tracer could not attach on this kernel,
	// so that writes made through it go unseen: io_uring requests on a
	// kernel that has no tracepoint for them.
	Unwatched []string
}

// Unattributed names each non-zero cause of writes whose test could not be
// told exactly (they are reported as ambiguous instead).
func (s Stats) Unattributed() map[string]uint64 {
	m := map[string]uint64{}
	for k, v := range map[string]uint64{"goroutine_map_full": s.GoroutineMapFull, "test_binary_not_paused": s.StopErrors} {
		if v > 0 {
			m[k] = v
		}
	}
	return m
}

// Lost is the number of records or syscalls that never reached user space.
func (s Stats) Lost() uint64 { return s.RingbufFull + s.ProcMapFull }

// LostByCause names each non-zero cause of loss.
func (s Stats) LostByCause() map[string]uint64 {
	m := map[string]uint64{}
	for k, v := range map[string]uint64{"ringbuf_full": s.RingbufFull, "proc_map_full": s.ProcMapFull} {
		if v > 0 {
			m[k] = v
		}
	}
	return m
}

// ContentsLater tells the kernel that the filesystem witness does not
// watch file contents yet: a process of the tree that makes one of the
// calls after which they must be watched is paused, and a KindContents
// record (or a KindExec record with ExecContents) asks for them
// (bpf/lib/contents.h). Call it before COMMAND starts.
func (t *Tracer) ContentsLater() error {
	if err := t.objs.Contents.Update(uint32(0), writewatchContentsState{Lazy: 1}, ebpf.UpdateAny); err != nil {
		return fmt.Errorf("tracer: contents later: %w", err)
	}
	return nil
}

// ContentsWatched tells the kernel that file contents are watched now:
// no process is paused for them any more, and no write is counted or
// marked as unwatched.
func (t *Tracer) ContentsWatched() error {
	var c writewatchContentsState
	if err := t.objs.Contents.Lookup(uint32(0), &c); err != nil {
		return fmt.Errorf("tracer: contents watched: %w", err)
	}
	c.Lazy, c.Window = 0, 0
	if err := t.objs.Contents.Update(uint32(0), c, ebpf.UpdateAny); err != nil {
		return fmt.Errorf("tracer: contents watched: %w", err)
	}
	return nil
}

// Close detaches every program and frees the maps. Nothing is pinned, so
// nothing outlives the process either way.
func (t *Tracer) Close() error {
	var errs []error
	t.closeOnce.Do(func() {
		defer phases.Start("tracer: close")()
		if t.rd != nil {
			errs = append(errs, t.rd.Close())
		}
		for _, l := range t.links {
			errs = append(errs, l.Close())
		}
		for tgid := range t.gotests {
			t.ForgetGoTest(tgid)
		}
		t.preparing.Wait()
		for _, p := range t.prepared {
			t.unprepare(p)
		}
		clear(t.prepared)
		t.detaching.Wait()
		if t.lsm != nil {
			errs = append(errs, t.lsm.Close())
		}
		// The Go test programs may still be loading: they close
		// themselves then (loadGoTests).
		if t.goDrop != nil {
			t.goOnce.Do(t.goDrop)
		}
		t.mu.Lock()
		t.closed = true
		if t.uringLink != nil {
			errs = append(errs, t.uringLink.Close())
		}
		errs = append(errs, t.objs.Close())
		t.mu.Unlock()
	})
	return errors.Join(errs...)
}

// cloneMaps clones this tracer's maps, for programs that load in the
// background: Close may close its own meanwhile.
func (t *Tracer) cloneMaps() (map[string]*ebpf.Map, error) {
	maps := map[string]*ebpf.Map{}
	for name, m := range t.objs.writewatchMaps.all() {
		c, err := m.Clone()
		if err != nil {
			closeMaps(maps)
			return nil, fmt.Errorf("clone map %s: %w", name, err)
		}
		maps[name] = c
	}
	return maps, nil
}

// enumValue is the value of the enumerator name of the C enum enum in
// the programs' BTF.
func enumValue(spec *ebpf.CollectionSpec, enum, name string) (uint32, error) {
	var e *btf.Enum
	if err := spec.Types.TypeByName(enum, &e); err != nil {
		return 0, fmt.Errorf("enum %s: %w", enum, err)
	}
	for _, v := range e.Values {
		if v.Name == name {
			return uint32(v.Value), nil
		}
	}
	return 0, fmt.Errorf("the BPF programs have no %s in enum %s", name, enum)
}

func classify(what string, err error) error {
	var verr *ebpf.VerifierError
	switch {
	case errors.As(err, &verr):
		// The verifier answers EACCES too; that is no privilege problem.
		return fmt.Errorf("%s: %w: the kernel's verifier rejected a program: %w", what, ErrUnsupported, err)
	case errors.Is(err, unix.EPERM), errors.Is(err, unix.EACCES):
		return fmt.Errorf("%s: %w: %w", what, ErrPermission, err)
	case errors.Is(err, ebpf.ErrNotSupported), errors.Is(err, unix.EINVAL) && strings.Contains(err.Error(), "helper"):
		return fmt.Errorf("%s: %w: %w", what, ErrUnsupported, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

func pidNamespace() (dev, ino uint64, ok bool) {
	var st unix.Stat_t
	if err := unix.Stat("/proc/self/ns/pid", &st); err != nil {
		return 0, 0, false
	}
	return st.Dev, st.Ino, true
}

// bootOffset is the wall clock minus CLOCK_BOOTTIME, the kernel's clock
// for record timestamps.
func bootOffset() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return 0
	}
	return time.Now().UnixNano() - ts.Nano()
}
