package tracer

import (
	"debug/buildinfo"
	"debug/dwarf"
	"debug/elf"
	"debug/gosym"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/writewatch/writewatch/internal/phases"
)

// GoLayout is what the uprobes need to know about one Go test binary.
// Uprobes cannot be CO-RE'd against Go's structs: the field offsets come
// from the binary's DWARF, or, for binaries without DWARF (go test links
// with -w), from goLayouts by Go version.
type GoLayout struct {
	GoidOff       uint32 // runtime.g.goid
	ParentGoidOff uint32 // runtime.g.parentGoid (Go 1.21 and newer)
	NameOff       uint32 // testing.common.name, from a *testing.T
	// Package is the import path of the package under test, from the
	// binary's build info ("example.com/app.test" names "example.com/app").
	Package   string
	GoVersion string
	// FromDWARF tells where the offsets came from.
	FromDWARF bool

	funcs       map[string]uint64 // file offsets of the hooked functions
	hasTestMain bool
	// lines is the binary's line table, made on first use from its
	// .gopclntab: the test binary does not wait for it.
	lines func() *gosym.Table
}

// goLayouts are the offsets per Go release for binaries without DWARF.
// Each was read from the DWARF of a test binary built by that release
// (go test -c); TestGoLayoutTableReleases checks every entry the same
// way, with each release's own toolchain.
var goLayouts = map[string]GoLayout{
	"go1.24": {GoidOff: 160, ParentGoidOff: 280, NameOff: 248},
	"go1.25": {GoidOff: 152, ParentGoidOff: 272, NameOff: 256},
	"go1.26": {GoidOff: 152, ParentGoidOff: 280, NameOff: 288},
	"go1.27": {GoidOff: 152, ParentGoidOff: 280, NameOff: 288},
}

// ErrNotGoTest means the file is not a Go test binary whose tests can be
// followed: no Go build info, no testing package, or field offsets
// unknown.
var ErrNotGoTest = errors.New("cannot follow the tests of this binary")

// ReadGoLayout reads the field offsets, the hooked functions and the
// package of a Go test binary.
func ReadGoLayout(path string) (GoLayout, error) {
	var lay GoLayout
	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		return lay, fmt.Errorf("%w: no Go build info: %w", ErrNotGoTest, err)
	}
	lay.GoVersion = bi.GoVersion
	lay.Package = strings.TrimSuffix(bi.Path, ".test")
	f, err := elf.Open(path)
	if err != nil {
		return lay, err
	}
	defer f.Close()
	if err := lay.readFuncs(f); err != nil {
		return lay, err
	}
	d, err := f.DWARF()
	if err == nil {
		if err := lay.readDWARF(d); err != nil {
			return lay, err
		}
		lay.FromDWARF = true
		return lay, nil
	}
	known, ok := goLayouts[release(lay.GoVersion)]
	if !ok {
		return lay, fmt.Errorf("%w: %s: the binary has no DWARF (go test links with -w) and writewatch does not know this Go release's layout", ErrNotGoTest, lay.GoVersion)
	}
	lay.GoidOff, lay.ParentGoidOff, lay.NameOff = known.GoidOff, known.ParentGoidOff, known.NameOff
	return lay, nil
}

// release is "go1.26" for "go1.26.8", "go1.26rc1" or "go1.26.0-X".
func release(v string) string {
	rest, ok := strings.CutPrefix(v, "go1.")
	if !ok {
		return v
	}
	n := 0
	for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
		n++
	}
	return "go1." + rest[:n]
}

// readFuncs finds the hooked functions, and TestMain, in the pclntab,
// which even a stripped Go binary keeps, and turns their addresses into
// file offsets. It reads only the names of the functions (funcOffsets);
// the line table is made when first asked for.
func (lay *GoLayout) readFuncs(f *elf.File) error {
	sec, text := f.Section(".gopclntab"), f.Section(".text")
	if sec == nil || text == nil {
		return fmt.Errorf("%w: no .gopclntab", ErrNotGoTest)
	}
	data, err := sec.Data()
	if err != nil {
		return err
	}
	names := lay.testFuncNames("TestMain")
	for _, p := range goProbes {
		names = append(names, p.symbol)
	}
	rt0 := "_rt0_" + goarch(f.Machine) + "_linux"
	offsets, ok := funcOffsets(data, append(names, rt0))
	base := text.Addr
	if ok {
		entry, found := offsets[rt0]
		if base, err = goTextStart(f, text, sec, data, entry, found); err != nil {
			return err
		}
	}
	lay.lines = sync.OnceValue(func() *gosym.Table {
		tab, err := gosym.NewTable(nil, gosym.NewLineTable(data, base))
		if err != nil {
			return nil
		}
		return tab
	})
	entries := map[string]uint64{}
	for name, off := range offsets {
		entries[name] = base + off
	}
	if !ok {
		tab := lay.lines()
		if tab == nil {
			_, err := gosym.NewTable(nil, gosym.NewLineTable(data, base))
			return fmt.Errorf("%w: read .gopclntab: %w", ErrNotGoTest, err)
		}
		for _, name := range names {
			if fn := tab.LookupFunc(name); fn != nil {
				entries[name] = fn.Entry
			}
		}
	}
	for _, name := range lay.testFuncNames("TestMain") {
		if entries[name] != 0 {
			lay.hasTestMain = true
		}
	}
	lay.funcs = map[string]uint64{}
	for _, p := range goProbes {
		entry, ok := entries[p.symbol]
		if !ok {
			continue
		}
		for _, prog := range f.Progs {
			if prog.Type == elf.PT_LOAD && prog.Flags&elf.PF_X != 0 && entry >= prog.Vaddr && entry < prog.Vaddr+prog.Memsz {
				lay.funcs[p.symbol] = entry - prog.Vaddr + prog.Off
			}
		}
	}
	return nil
}

// goTextStart is the address of runtime.text, from which a Go 1.18+
// pclntab (tab, the section pcln) counts its functions' entries (rt0,
// when found, is the offset there of _rt0_<arch>_linux). Go's own linker
// starts .text with it, and its entry point is _rt0_<arch>_linux. A
// binary linked by the system's linker (cgo, -linkmode=external) starts
// .text with the C runtime's code, and go test strips the symbol table
// that would say where Go's begins: the runtime's module data says it
// (moduleText). A uprobe put at an offset counted from .text there lands
// inside another function, and the binary faults when it runs it.
func goTextStart(f *elf.File, text, pcln *elf.Section, tab []byte, rt0 uint64, found bool) (uint64, error) {
	if found && text.Addr+rt0 == f.Entry {
		return text.Addr, nil
	}
	for _, prog := range f.Progs {
		if prog.Type != elf.PT_LOAD || prog.Flags&elf.PF_W == 0 {
			continue
		}
		data := make([]byte, prog.Filesz)
		if _, err := prog.ReadAt(data, 0); err != nil {
			return 0, fmt.Errorf("%w: read its data: %w", ErrNotGoTest, err)
		}
		if start, ok := moduleText(data, prog.Vaddr, tab, pcln.Addr); ok {
			return start, nil
		}
	}
	return 0, fmt.Errorf("%w: linked by the system's linker (cgo), and its runtime's module data not found: where its Go code begins is unknown", ErrNotGoTest)
}

// goarch is GOARCH for an ELF machine writewatch runs on.
func goarch(m elf.Machine) string {
	if m == elf.EM_AARCH64 {
		return "arm64"
	}
	return "amd64"
}

func (lay *GoLayout) readDWARF(d *dwarf.Data) error {
	var tOff, bOff, fOff uint32
	want := map[string]map[string]*uint32{
		"runtime.g":      {"goid": &lay.GoidOff, "parentGoid": &lay.ParentGoidOff},
		"testing.common": {"name": &lay.NameOff},
		"testing.T":      {"common": &tOff},
		"testing.B":      {"common": &bOff},
		"testing.F":      {"common": &fOff},
	}
	found := map[string]bool{}
	r := d.Reader()
	for len(found) < len(want) {
		e, err := r.Next()
		if err != nil {
			return fmt.Errorf("read DWARF: %w", err)
		}
		if e == nil {
			break
		}
		if e.Tag == dwarf.TagCompileUnit {
			continue
		}
		name, _ := e.Val(dwarf.AttrName).(string)
		fields, ok := want[name]
		if e.Tag != dwarf.TagStructType || !ok || found[name] {
			if e.Children {
				r.SkipChildren()
			}
			continue
		}
		seen := 0
		for {
			c, err := r.Next()
			if err != nil || c == nil || c.Tag == 0 {
				break
			}
			fname, _ := c.Val(dwarf.AttrName).(string)
			if dst, ok := fields[fname]; ok {
				if off, ok := c.Val(dwarf.AttrDataMemberLoc).(int64); ok {
					*dst = uint32(off)
					seen++
				}
			}
			if c.Children {
				r.SkipChildren()
			}
		}
		if seen != len(fields) {
			return fmt.Errorf("%w: DWARF: %s lacks fields (Go %s)", ErrNotGoTest, name, lay.GoVersion)
		}
		found[name] = true
	}
	if !found["runtime.g"] || !found["testing.common"] || !found["testing.T"] {
		return fmt.Errorf("%w: no DWARF for the testing package", ErrNotGoTest)
	}
	// name is read from the *testing.T, whose common is embedded; from a
	// *B or *F too, where common must lie at the same offset.
	lay.NameOff += tOff
	if !found["testing.B"] || bOff != tOff {
		delete(lay.funcs, "testing.(*B).runN")
	}
	if !found["testing.F"] || fOff != tOff {
		delete(lay.funcs, "testing.fRunner")
	}
	return nil
}

// goTest is one followed Go test binary: the uprobes attached for it
// alone, or those attached to its file before it ran (prepared).
type goTest struct {
	links    []link.Link
	lay      *GoLayout
	prepared *preparedGoTest
}

// fileID names a file by its device and inode.
type fileID struct{ dev, ino uint64 }

// kernelFile is id as the kernel names the file (map gofiles), its
// device as struct super_block holds it (kernelDev). On a file system
// whose st_dev is not its superblock's, such as btrfs, the kernel finds
// no entry, and the binary is paused at its exec instead.
func (id fileID) kernelFile() writewatchFileKey {
	return writewatchFileKey{Ino: id.ino, Dev: kernelDev(id.dev)}
}

// fileOfKernel is the fileID of a file as the kernel names it.
func fileOfKernel(ino uint64, dev uint32) fileID {
	return fileID{dev: statDev(dev), ino: ino}
}

// preparedGoTest is a Go test binary's uprobes, attached to its file as
// soon as the Go linker wrote it (PrepareGoTest), for every process that
// runs it. Once they are, the file's entry in gofiles tells the kernel:
// a process of the tree that executes it is then not paused at its exec
// (ExecPrepared).
type preparedGoTest struct {
	id      fileID
	written unix.Timespec // the file's mtime and size when prepared
	size    int64
	done    chan struct{} // closed once lay, links and err are set
	lay     GoLayout
	links   []link.Link
	err     error
	inMap   bool // in gofiles
	users   int  // followed processes running the file
}

// The functions hooked in a Go test binary, each with the cookie that
// tells the one program (go_probe) which it is. Only tRunner is needed.
// Without an end hook, a test counts as running until its process exits;
// without runqput, goroutines a test starts are followed one level deep
// only (from runtime.g.parentGoid at the write).
var goProbes = []struct {
	symbol   string
	optional bool
	cookie   writewatchWwGoProbe
}{
	{"testing.tRunner", false, writewatchWwGoProbeWW_GO_TEST_START},
	// Fuzz targets, benchmarks and examples start like tests, each in a
	// function of its own (the seeds of a fuzz target run under tRunner).
	{"testing.fRunner", true, writewatchWwGoProbeWW_GO_TEST_START},
	{"testing.(*B).runN", true, writewatchWwGoProbeWW_GO_BENCH_START},
	{"testing.runExample", true, writewatchWwGoProbeWW_GO_EXAMPLE_START},
	// The test function returned: tRunner's deferred function runs the
	// cleanups (runCleanup) on every path, which marks the end.
	{"testing.(*common).runCleanup", true, writewatchWwGoProbeWW_GO_TEST_END},
	// An example's function returned: runExample's deferred function
	// reports its result.
	{"testing.(*InternalExample).processRunResult", true, writewatchWwGoProbeWW_GO_TEST_END},
	{"runtime.runqput", true, writewatchWwGoProbeWW_GO_NEW_GOROUTINE},
}

// PrepareGoTest attaches the test-boundary uprobes to the Go test binary
// at path, which the Go linker has just written and go test will run.
// Attaching waits for one of the kernel's grace periods (about 10 ms);
// it passes here, while go test finishes the file (it rewrites the build
// ID, about 10 ms more), rather than while the binary is paused at its
// exec. These uprobes fire in every process that runs the file; the
// program ignores those FollowGoTest was not told of. Where Go test
// uprobes are perf-event ones (one per function and process), nothing is
// prepared. A file never run keeps its uprobes until Close.
func (t *Tracer) PrepareGoTest(path string) {
	var st unix.Stat_t
	if !t.multi || unix.Stat(path, &st) != nil {
		return
	}
	id := fileID{st.Dev, st.Ino}
	if old := t.prepared[id]; old != nil {
		if old.written == st.Mtim && old.size == st.Size {
			return
		}
		// Linked again in place: the old uprobes' offsets are the old
		// binary's.
		<-old.done
		delete(t.prepared, id)
		t.unprepare(old)
	}
	p := &preparedGoTest{id: id, written: st.Mtim, size: st.Size, done: make(chan struct{})}
	t.prepared[id] = p
	t.preparing.Add(1)
	go func() {
		defer t.preparing.Done()
		defer close(p.done)
		p.lay, p.links, p.err = t.attachGoProbes(path, 0)
		if p.err != nil {
			return
		}
		// Where the entry cannot be made, the binary is paused at its
		// exec, as without it.
		val := writewatchGoproc{GoidOff: p.lay.GoidOff, ParentGoidOff: p.lay.ParentGoidOff, NameOff: p.lay.NameOff}
		p.inMap = t.objs.Gofiles.Update(id.kernelFile(), val, ebpf.UpdateAny) == nil
	}()
}

// unprepare forgets the file of p, whose uprobes no process runs: its
// gofiles entry first, so that no exec finds it after the uprobes go.
func (t *Tracer) unprepare(p *preparedGoTest) {
	if p.inMap {
		t.objs.Gofiles.Delete(p.id.kernelFile())
	}
	if p.users == 0 {
		t.closeLinks(p.links)
	}
}

// FollowGoTest follows the goroutines of the Go test binary running as
// process tgid (nsPID in this process's PID namespace), through the
// test-boundary uprobes: those prepared for its file, or attached now.
// Call it while the process is paused (ExecStopped), then resume it.
func (t *Tracer) FollowGoTest(tgid, nsPID uint32) (GoLayout, error) {
	exe := fmt.Sprintf("/proc/%d/exe", nsPID)
	gt := &goTest{}
	if p := t.preparedFor(exe); p != nil {
		end := phases.Start("Go test binary: prepared uprobes")
		<-p.done
		end()
		if p.err == nil {
			p.users++
			gt.lay, gt.prepared = &p.lay, p
		}
	}
	if gt.prepared == nil {
		lay, links, err := t.attachGoProbes(exe, nsPID)
		if err != nil {
			return lay, err
		}
		gt.lay, gt.links = &lay, links
	}
	lay := gt.lay
	val := writewatchGoproc{GoidOff: lay.GoidOff, ParentGoidOff: lay.ParentGoidOff, NameOff: lay.NameOff}
	if err := t.objs.Goprocs.Update(tgid, val, ebpf.UpdateAny); err != nil {
		t.release(gt)
		return *lay, fmt.Errorf("follow Go test %d: %w", tgid, err)
	}
	t.gotests[tgid] = gt
	go lay.lines() // made while the binary runs, for GoTestSource
	return *lay, nil
}

// FollowPreparedGoTest follows the Go test binary running as process
// tgid, which the kernel found had its file's uprobes attached (an exec
// record with ExecPrepared, whose Ino and Dev name the file) and did not
// pause: its goprocs entry is made.
func (t *Tracer) FollowPreparedGoTest(tgid uint32, ino uint64, dev uint32) (GoLayout, error) {
	p := t.prepared[fileOfKernel(ino, dev)]
	if p == nil {
		// Its last other process exited meanwhile, and took the
		// uprobes.
		return GoLayout{}, fmt.Errorf("%w: its file's uprobes were detached as it started", ErrNotGoTest)
	}
	end := phases.Start("Go test binary: prepared uprobes")
	<-p.done // closed before its gofiles entry was made
	end()
	p.users++
	t.gotests[tgid] = &goTest{lay: &p.lay, prepared: p}
	go p.lay.lines() // made while the binary runs, for GoTestSource
	return p.lay, nil
}

// preparedFor is what PrepareGoTest readied for the file exe is, or nil.
func (t *Tracer) preparedFor(exe string) *preparedGoTest {
	var st unix.Stat_t
	if len(t.prepared) == 0 || unix.Stat(exe, &st) != nil {
		return nil
	}
	return t.prepared[fileID{st.Dev, st.Ino}]
}

// attachGoProbes reads the layout of the Go test binary exe and attaches
// its uprobes, for process pid alone (in this process's PID namespace),
// or for every process when pid is 0.
func (t *Tracer) attachGoProbes(exe string, pid uint32) (GoLayout, []link.Link, error) {
	end := phases.Start("Go test binary: read layout")
	lay, err := ReadGoLayout(exe)
	end()
	if err != nil {
		return lay, nil, err
	}
	t.goOnce.Do(t.goStart) // the programs, if they are not loading yet
	<-t.goReady
	if t.goErr != nil {
		return lay, nil, t.goErr
	}
	ex, err := link.OpenExecutable(exe)
	if err != nil {
		return lay, nil, fmt.Errorf("open %s: %w", exe, err)
	}
	var links []link.Link
	fail := func(err error) (GoLayout, []link.Link, error) {
		for _, l := range links {
			l.Close()
		}
		return lay, nil, err
	}
	// One link for every function hooked (uprobe_multi): closing it
	// waits for one grace period of the kernel's; where each function
	// needs a perf-event uprobe of its own, one each.
	var addrs, cookies []uint64
	for _, p := range goProbes {
		addr, ok := lay.funcs[p.symbol]
		if !ok && p.optional {
			continue
		}
		if !ok {
			return fail(fmt.Errorf("%w: no function %s", ErrNotGoTest, p.symbol))
		}
		addrs, cookies = append(addrs, addr), append(cookies, uint64(p.cookie))
	}
	prog := t.objs.GoProbe
	if t.multi {
		l, err := ex.UprobeMulti(nil, prog, &link.UprobeMultiOptions{Addresses: addrs, Cookies: cookies, PID: pid})
		if err != nil {
			return fail(classify("attach uprobe", err))
		}
		return lay, []link.Link{l}, nil
	}
	for i, addr := range addrs {
		l, err := ex.Uprobe("", prog, &link.UprobeOptions{PID: int(pid), Address: addr, Cookie: cookies[i]})
		if err != nil {
			return fail(classify("attach uprobe", err))
		}
		links = append(links, l)
	}
	return lay, links, nil
}

// release closes gt's own uprobes, or, when it ran a prepared file, the
// file's once no other followed process runs it. The kernel takes a
// while to unregister them, so they close in the background; Close
// waits for them.
func (t *Tracer) release(gt *goTest) {
	if p := gt.prepared; p != nil {
		if p.users--; p.users > 0 {
			return
		}
		if t.prepared[p.id] == p {
			delete(t.prepared, p.id)
			t.unprepare(p)
		} else {
			// Linked again in place meanwhile: forgotten already.
			t.closeLinks(p.links)
		}
		return
	}
	t.closeLinks(gt.links)
}

// closeLinks closes links in the background (Close waits).
func (t *Tracer) closeLinks(links []link.Link) {
	for _, l := range links {
		t.detaching.Add(1)
		go func() {
			defer t.detaching.Done()
			l.Close()
		}()
	}
}

// ForgetGoTest detaches the uprobes of a Go test binary that exited
// (release).
func (t *Tracer) ForgetGoTest(tgid uint32) {
	gt := t.gotests[tgid]
	if gt == nil {
		return
	}
	delete(t.gotests, tgid)
	t.objs.Goprocs.Delete(tgid)
	t.release(gt)
}

// GoTestSource names the source file and line of the function at pc in
// the followed Go test binary tgid: a KindTestStart record's EntryPC.
// Without a pc (a benchmark's start), or when pc is in the testing
// package (a fuzz target's input), it finds the function of the test
// named name (its top-level part: BenchmarkX for BenchmarkX/sub) in the
// package under test.
func (t *Tracer) GoTestSource(tgid uint32, pc uint64, name string) (string, int) {
	gt := t.gotests[tgid]
	if gt == nil || gt.lay.lines == nil {
		return "", 0
	}
	lines := gt.lay.lines()
	if lines == nil {
		return "", 0
	}
	// A fuzz target's inputs run under tRunner as closures of the testing
	// package: they are named for their target.
	if fn := lines.PCToFunc(pc); pc != 0 && fn != nil && strings.HasPrefix(fn.Name, "testing.") {
		pc = 0
	}
	if pc == 0 {
		top, _, _ := strings.Cut(name, "/")
		fn := gt.lay.lookupTestFunc(lines, top)
		if fn == nil {
			return "", 0
		}
		pc = fn.Entry
	}
	file, line, _ := lines.PCToLine(pc)
	return file, line
}

// testFuncNames are the symbols function name of the package under test
// (or of its external test package) may have.
func (lay *GoLayout) testFuncNames(name string) []string {
	if name == "" {
		return nil
	}
	// The symbol table writes the dots of a path's last element as %2e.
	pkg := lay.Package
	if i := strings.LastIndexByte(pkg, '/'); i >= 0 {
		pkg = pkg[:i+1] + strings.ReplaceAll(pkg[i+1:], ".", "%2e")
	}
	return []string{pkg + "." + name, pkg + "_test." + name}
}

// lookupTestFunc finds function name of the package under test (or of
// its external test package) in lines.
func (lay *GoLayout) lookupTestFunc(lines *gosym.Table, name string) *gosym.Func {
	for _, sym := range lay.testFuncNames(name) {
		if fn := lines.LookupFunc(sym); fn != nil {
			return fn
		}
	}
	return nil
}

// HasTestMain reports whether the package under test defines TestMain.
func (lay *GoLayout) HasTestMain() bool { return lay.hasTestMain }
