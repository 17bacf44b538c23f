// Package gobin reads what following a Go test binary's tests needs
// from its file: the offsets of the runtime's and the testing package's
// fields the uprobes read (from its DWARF, or by Go release for a binary
// go test linked without it), the file offsets of the functions the
// uprobes hook (from its .gopclntab, which even a stripped binary keeps),
// the package under test, and, on demand, the line table that names a
// test's source file and line.
package gobin

import (
	"debug/buildinfo"
	"debug/dwarf"
	"debug/elf"
	"debug/gosym"
	"errors"
	"fmt"
	"strings"
	"sync"
)

// The functions of a Go test binary that the test uprobes hook (Hooks).
// Only TRunner is needed. Without an end hook, a test counts as running
// until its process exits; without RunqPut, goroutines a test starts are
// followed one level deep only (from runtime.g.parentGoid at the write).
const (
	TRunner = "testing.tRunner"
	// Fuzz targets, benchmarks and examples start like tests, each in a
	// function of its own (the seeds of a fuzz target run under tRunner).
	FRunner    = "testing.fRunner"
	BRunN      = "testing.(*B).runN"
	RunExample = "testing.runExample"
	// The test function returned: tRunner's deferred function runs the
	// cleanups (runCleanup) on every path, which marks the end.
	RunCleanup = "testing.(*common).runCleanup"
	// An example's function returned: runExample's deferred function
	// reports its result.
	ProcessRunResult = "testing.(*InternalExample).processRunResult"
	RunqPut          = "runtime.runqput"
)

// Hooks are the functions Read finds the entries of.
var Hooks = []string{TRunner, FRunner, BRunN, RunExample, RunCleanup, ProcessRunResult, RunqPut}

// Layout is what the uprobes need to know about one Go test binary.
// Uprobes cannot be CO-RE'd against Go's structs: the field offsets come
// from the binary's DWARF, or, for binaries without DWARF (go test links
// with -w), from layouts by Go version.
type Layout struct {
	GoidOff       uint32 // runtime.g.goid
	ParentGoidOff uint32 // runtime.g.parentGoid (Go 1.21 and newer)
	NameOff       uint32 // testing.common.name, from a *testing.T
	// Package is the import path of the package under test, from the
	// binary's build info ("example.com/app.test" names "example.com/app").
	Package   string
	GoVersion string
	// FromDWARF tells where the offsets came from.
	FromDWARF bool

	// Funcs are the file offsets of the hooked functions found (Hooks).
	Funcs       map[string]uint64
	hasTestMain bool
	// lines is the binary's line table, made on first use from its
	// .gopclntab: the test binary does not wait for it.
	lines func() *gosym.Table
}

// layouts are the offsets per Go release for binaries without DWARF.
// Each was read from the DWARF of a test binary built by that release
// (go test -c); TestLayoutTableReleases checks every entry the same
// way, with each release's own toolchain.
var layouts = map[string]Layout{
	"go1.24": {GoidOff: 160, ParentGoidOff: 280, NameOff: 248},
	"go1.25": {GoidOff: 152, ParentGoidOff: 272, NameOff: 256},
	"go1.26": {GoidOff: 152, ParentGoidOff: 280, NameOff: 288},
	"go1.27": {GoidOff: 152, ParentGoidOff: 280, NameOff: 288},
}

// ErrNotGoTest means the file is not a Go test binary whose tests can be
// followed: no Go build info, no testing package, or field offsets
// unknown.
var ErrNotGoTest = errors.New("cannot follow the tests of this binary")

// Read reads the field offsets, the hooked functions and the
// package of a Go test binary.
func Read(path string) (Layout, error) {
	var lay Layout
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
	known, ok := layouts[release(lay.GoVersion)]
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
func (lay *Layout) readFuncs(f *elf.File) error {
	sec, text := f.Section(".gopclntab"), f.Section(".text")
	if sec == nil || text == nil {
		return fmt.Errorf("%w: no .gopclntab", ErrNotGoTest)
	}
	data, err := sec.Data()
	if err != nil {
		return err
	}
	entries, err := lay.funcEntries(f, text, sec, data)
	if err != nil {
		return err
	}
	for _, name := range lay.testFuncNames("TestMain") {
		if entries[name] != 0 {
			lay.hasTestMain = true
		}
	}
	lay.Funcs = hookOffsets(f, entries)
	return nil
}

// funcEntries finds the entry addresses of TestMain and the hooked
// functions in the pclntab (data, the section sec), and makes the line
// table ready to be read.
func (lay *Layout) funcEntries(f *elf.File, text, sec *elf.Section, data []byte) (map[string]uint64, error) {
	names := lay.testFuncNames("TestMain")
	names = append(names, Hooks...)
	rt0 := "_rt0_" + goarch(f.Machine) + "_linux"
	offsets, ok := funcOffsets(data, append(names, rt0))
	base := text.Addr
	if ok {
		entry, found := offsets[rt0]
		var err error
		if base, err = goTextStart(f, text, sec, data, entry, found); err != nil {
			return nil, err
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
		if err := lay.lookUpFuncs(entries, names, data, base); err != nil {
			return nil, err
		}
	}
	return entries, nil
}

// lookUpFuncs adds the entries of names from the line table, for a
// pclntab funcOffsets does not read.
func (lay *Layout) lookUpFuncs(entries map[string]uint64, names []string, data []byte, base uint64) error {
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
	return nil
}

// hookOffsets turns the entries of the hooked functions found into file
// offsets, through the executable segment that holds each.
func hookOffsets(f *elf.File, entries map[string]uint64) map[string]uint64 {
	offsets := map[string]uint64{}
	for _, symbol := range Hooks {
		entry, ok := entries[symbol]
		if !ok {
			continue
		}
		for _, prog := range f.Progs {
			if prog.Type == elf.PT_LOAD && prog.Flags&elf.PF_X != 0 && entry >= prog.Vaddr && entry < prog.Vaddr+prog.Memsz {
				offsets[symbol] = entry - prog.Vaddr + prog.Off
			}
		}
	}
	return offsets
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

func (lay *Layout) readDWARF(d *dwarf.Data) error {
	var tOff, bOff, fOff uint32
	want := map[string]map[string]*uint32{
		"runtime.g":      {"goid": &lay.GoidOff, "parentGoid": &lay.ParentGoidOff},
		"testing.common": {"name": &lay.NameOff},
		"testing.T":      {"common": &tOff},
		"testing.B":      {"common": &bOff},
		"testing.F":      {"common": &fOff},
	}
	found, err := lay.readStructs(d.Reader(), want)
	if err != nil {
		return err
	}
	if !found["runtime.g"] || !found["testing.common"] || !found["testing.T"] {
		return fmt.Errorf("%w: no DWARF for the testing package", ErrNotGoTest)
	}
	// name is read from the *testing.T, whose common is embedded; from a
	// *B or *F too, where common must lie at the same offset.
	lay.NameOff += tOff
	if !found["testing.B"] || bOff != tOff {
		delete(lay.Funcs, BRunN)
	}
	if !found["testing.F"] || fOff != tOff {
		delete(lay.Funcs, FRunner)
	}
	return nil
}

// readStructs reads, for each struct type named in want, the offsets of
// the fields named there (field -> where to store its offset), and
// returns the structs found. A struct found without all of them is an
// error.
func (lay *Layout) readStructs(r *dwarf.Reader, want map[string]map[string]*uint32) (map[string]bool, error) {
	found := map[string]bool{}
	for len(found) < len(want) {
		e, err := r.Next()
		if err != nil {
			return nil, fmt.Errorf("read DWARF: %w", err)
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
		if readMembers(r, fields) != len(fields) {
			return nil, fmt.Errorf("%w: DWARF: %s lacks fields (Go %s)", ErrNotGoTest, name, lay.GoVersion)
		}
		found[name] = true
	}
	return found, nil
}

// readMembers reads the members of the struct whose entry r has just
// read, stores the offsets of those named in fields, and returns how
// many it stored.
func readMembers(r *dwarf.Reader, fields map[string]*uint32) int {
	seen := 0
	for {
		c, err := r.Next()
		if err != nil || c == nil || c.Tag == 0 {
			return seen
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
}

// Source names the source file and line of the function at pc: a
// KindTestStart record's EntryPC. Without a pc (a benchmark's start), or
// when pc is in the testing package (a fuzz target's input), it finds the
// function of the test named name (its top-level part: BenchmarkX for
// BenchmarkX/sub) in the package under test.
func (lay *Layout) Source(pc uint64, name string) (string, int) {
	if lay.lines == nil {
		return "", 0
	}
	lines := lay.lines()
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
		fn := lay.lookupTestFunc(lines, top)
		if fn == nil {
			return "", 0
		}
		pc = fn.Entry
	}
	file, line, _ := lines.PCToLine(pc)
	return file, line
}

// Lines is the binary's line table, made on first use (nil when its
// .gopclntab cannot be read): Read does not wait for it.
func (lay *Layout) Lines() *gosym.Table {
	if lay.lines == nil {
		return nil
	}
	return lay.lines()
}

// testFuncNames are the symbols function name of the package under test
// (or of its external test package) may have.
func (lay *Layout) testFuncNames(name string) []string {
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
func (lay *Layout) lookupTestFunc(lines *gosym.Table, name string) *gosym.Func {
	for _, sym := range lay.testFuncNames(name) {
		if fn := lines.LookupFunc(sym); fn != nil {
			return fn
		}
	}
	return nil
}

// HasTestMain reports whether the package under test defines TestMain.
func (lay *Layout) HasTestMain() bool { return lay.hasTestMain }
