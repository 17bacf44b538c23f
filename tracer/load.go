package tracer

// Loading: the object, the kernel's BTF, the programs and their
// settings, attaching them.

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"

	"github.com/writewatch/writewatch/internal/phases"
)

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
	err = loadCore(spec, heavy, &t.objs, !uringLater, &t.priorErr)
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
// (docs/performance.md#start-up). The two small prior programs load in a
// third set meanwhile, whose failure leaves them out (priorErr).
func loadCore(spec *ebpf.CollectionSpec, heavy map[string]*ebpf.Map, objs *writewatchObjects, uring bool, priorErr *error) error {
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
	var prior priorObjects
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
	// The programs that note what a call found (lib/prior.h) need BPF
	// trampolines: a kernel without them runs without.
	wg.Go(func() { *priorErr = fentryErr(load("tracer: load the prior programs", []any{&prior})) })
	secondErr := load("tracer: load sys_enter's set", second)
	wg.Wait()
	err = errors.Join(firstErr, secondErr)
	if err == nil {
		err = maps.Assign(&objs.writewatchMaps)
	}
	if err != nil {
		for _, p := range []*ebpf.Program{exit.SysExit, sched.SchedExec, sched.SchedExit, sched.SchedFork, enter.SysEnter, uringProg.UringSubmit,
			prior.RenameTarget, prior.SetattrTarget} {
			if p != nil {
				p.Close()
			}
		}
		return err
	}
	p := &objs.writewatchPrograms
	p.SchedExec, p.SchedExit, p.SchedFork, p.SysExit = sched.SchedExec, sched.SchedExit, sched.SchedFork, exit.SysExit
	p.SysEnter, p.UringSubmit = enter.SysEnter, uringProg.UringSubmit
	p.RenameTarget, p.SetattrTarget = prior.RenameTarget, prior.SetattrTarget
	return nil
}

// priorObjects are the programs at the entry of the VFS's rename and
// setattr, which note what a call found before it changed its file
// (bpf/lib/prior.h).
type priorObjects struct {
	RenameTarget  *ebpf.Program `ebpf:"rename_target"`
	SetattrTarget *ebpf.Program `ebpf:"setattr_target"`
}

// fentryErr says why fentry programs did not load or attach, in a few
// words: the kernel's error when it gave one (a kernel without BPF
// trampolines refuses them with EPERM or ENOTSUPP before verifying
// anything).
func fentryErr(err error) error {
	var errno unix.Errno
	if err == nil || !errors.As(err, &errno) {
		return err
	}
	return fmt.Errorf("this kernel takes no fentry programs (%w)", errno)
}

// attachPrior attaches the prior programs, when they loaded. A kernel
// that cannot attach them (fentry needs BPF trampolines) runs without:
// records then do not say what a call found (Event.Prior), and severity
// assumes the worst. PriorErr says why.
func (t *Tracer) attachPrior() {
	if t.priorErr != nil {
		return
	}
	var links []link.Link
	for _, prog := range []*ebpf.Program{t.objs.RenameTarget, t.objs.SetattrTarget} {
		l, err := link.AttachTracing(link.TracingOptions{Program: prog})
		if err != nil {
			t.priorErr = fentryErr(err)
			for _, l := range links {
				l.Close()
			}
			return
		}
		links = append(links, l)
	}
	t.links = append(t.links, links...)
}

// PriorErr says why records cannot say what a rename's target or a
// metadata change's file was before the call (Event.Prior), nil when
// they can.
func (t *Tracer) PriorErr() error { return t.priorErr }

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
		// The key of the names' sums (bpf/lib/names.h): drawn for each
		// run, so that no name can be made to sum as another.
		"name_seed":      nameSeed(),
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

// nameSeed is a random key for the names' sums.
func nameSeed() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand never fails on Linux
	return binary.LittleEndian.Uint64(b[:])
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
	t.attachPrior()
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
