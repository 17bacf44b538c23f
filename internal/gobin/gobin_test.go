package gobin

import (
	"debug/elf"
	"encoding/binary"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// buildTestBinary compiles testdata/gotests' test binary with extra go
// test flags.
func buildTestBinary(t *testing.T, flags ...string) string {
	t.Helper()
	return buildTestBinaryWith(t, "", flags...)
}

// buildTestBinaryWith builds it with the Go toolchain named (GOTOOLCHAIN;
// the go command fetches it from the module proxy), or the installed one
// for "".
func buildTestBinaryWith(t *testing.T, toolchain string, flags ...string) string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("needs the go command")
	}
	out := filepath.Join(t.TempDir(), "gotests.test")
	args := append(append([]string{"test", "-c", "-o", out}, flags...), ".")
	cmd := exec.Command("go", args...)
	cmd.Dir = "../../testdata/gotests"
	if toolchain != "" {
		cmd.Env = append(os.Environ(), "GOTOOLCHAIN="+toolchain)
	}
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %v: %v\n%s", args, err, b)
	}
	return out
}

// The per-release table, used for test binaries go test links without
// DWARF, must match what the DWARF of a binary built by the installed
// toolchain says.
func TestLayoutTable(t *testing.T) {
	bin := buildTestBinary(t)
	lay, err := Read(bin)
	if err != nil {
		t.Fatal(err)
	}
	if !lay.FromDWARF {
		t.Fatal("go test -c kept no DWARF")
	}
	known, ok := layouts[release(runtime.Version())]
	if !ok {
		t.Fatalf("no layouts entry for %s; the DWARF says %+v", release(runtime.Version()), lay)
	}
	if known.GoidOff != lay.GoidOff || known.ParentGoidOff != lay.ParentGoidOff || known.NameOff != lay.NameOff {
		t.Errorf("layouts[%s] = %+v, DWARF says goid %d, parentGoid %d, name %d",
			release(runtime.Version()), known, lay.GoidOff, lay.ParentGoidOff, lay.NameOff)
	}
	if lay.Package != "example.com/gotests" {
		t.Errorf("package %q", lay.Package)
	}
	checkFuncEntries(t, bin, lay)
	checkProbeOffsets(t, bin, lay)
}

// A test binary linked by the system's linker, as a package using cgo
// is: its .text starts with the C runtime's code, and Go's, from which
// the pclntab counts, after it. Counted from .text, the uprobes landed
// inside other functions, and the os package's tests faulted.
func TestLayoutLinkedExternally(t *testing.T) {
	needCC(t)
	bin := buildTestBinary(t, "-ldflags=-linkmode=external")
	lay, err := Read(bin)
	if err != nil {
		t.Fatal(err)
	}
	checkProbeOffsets(t, bin, lay)
	checkFuncEntries(t, bin, lay)
	// As go test links it, without a symbol table: the runtime's module
	// data says where Go's code begins.
	stripped := buildTestBinary(t, "-ldflags=-linkmode=external -s -w")
	slay, err := Read(stripped)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(slay.Funcs, lay.Funcs) {
		t.Errorf("stripped: offsets %v, with its symbols %v", slay.Funcs, lay.Funcs)
	}
}

// needCC skips t where no C compiler is installed for the go command's
// external linking.
func needCC(t *testing.T) {
	t.Helper()
	if !haveCC() {
		t.Skip("needs a C compiler to link externally")
	}
}

// haveCC says whether the C compiler the go command links externally
// with (go env CC) is installed.
func haveCC() bool {
	out, err := exec.Command("go", "env", "CC").Output()
	if err != nil {
		return false
	}
	cc := strings.Fields(string(out))
	if len(cc) == 0 {
		return false
	}
	_, err = exec.LookPath(cc[0])
	return err == nil
}

// checkProbeOffsets checks the file offset found for each hooked
// function against the binary's symbol table.
func checkProbeOffsets(t *testing.T, bin string, lay Layout) {
	t.Helper()
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	addr := map[string]uint64{}
	for _, s := range syms {
		addr[s.Name] = s.Value
	}
	for _, symbol := range Hooks {
		a, ok := addr[symbol]
		if !ok {
			continue
		}
		var want uint64
		for _, prog := range f.Progs {
			if prog.Type == elf.PT_LOAD && prog.Flags&elf.PF_X != 0 && a >= prog.Vaddr && a < prog.Vaddr+prog.Memsz {
				want = a - prog.Vaddr + prog.Off
			}
		}
		if got := lay.Funcs[symbol]; got != want {
			t.Errorf("%s: file offset %#x, the symbol table says %#x", symbol, got, want)
		}
	}
}

// Every release in the table, checked against the DWARF of a test
// binary its own toolchain built (fetched from the Go module proxy), with
// the functions the uprobes hook present.
func TestLayoutTableReleases(t *testing.T) {
	for rel, known := range layouts {
		t.Run(rel, func(t *testing.T) {
			toolchain := rel + ".0"
			if rel == release(runtime.Version()) {
				toolchain = "" // the installed one: TestLayoutTable
			}
			bin := buildTestBinaryWith(t, toolchain)
			lay, err := Read(bin)
			if err != nil {
				t.Fatal(err)
			}
			if release(lay.GoVersion) != rel || !lay.FromDWARF {
				t.Fatalf("built by %s, DWARF %v", lay.GoVersion, lay.FromDWARF)
			}
			if known.GoidOff != lay.GoidOff || known.ParentGoidOff != lay.ParentGoidOff || known.NameOff != lay.NameOff {
				t.Errorf("layouts[%s] = %+v, DWARF says goid %d, parentGoid %d, name %d",
					rel, known, lay.GoidOff, lay.ParentGoidOff, lay.NameOff)
			}
			for _, symbol := range Hooks {
				if lay.Funcs[symbol] == 0 {
					t.Errorf("no %s in a %s test binary", symbol, rel)
				}
			}
			checkFuncEntries(t, bin, lay)
			// Linked by the system's linker, Go's code is found from
			// the runtime's module data, whose layout each release
			// must keep; the symbol table checks it.
			if haveCC() {
				ext := buildTestBinaryWith(t, toolchain, "-ldflags=-linkmode=external")
				elay, err := Read(ext)
				if err != nil {
					t.Fatal(err)
				}
				checkProbeOffsets(t, ext, elay)
			}
		})
	}
}

// A binary linked without DWARF and without a symbol table, as go test
// links them: offsets from the table, functions from the pclntab.
func TestLayoutStripped(t *testing.T) {
	bin := buildTestBinary(t, "-ldflags=-s -w")
	lay, err := Read(bin)
	if err != nil {
		t.Fatal(err)
	}
	if lay.FromDWARF {
		t.Error("found DWARF in a -w binary")
	}
	checkFuncEntries(t, bin, lay)
	for _, symbol := range Hooks {
		if lay.Funcs[symbol] == 0 {
			t.Errorf("no file offset for %s", symbol)
		}
	}
	lines := lay.Lines()
	if lines == nil {
		t.Fatal("no line table")
	}
	fn := lines.LookupFunc("example.com/gotests.TestSequentialWrites")
	if fn == nil {
		t.Fatal("TestSequentialWrites not in the line table")
	}
	if file, line, _ := lines.PCToLine(fn.Entry); filepath.Base(file) != "gotests_test.go" || line == 0 {
		t.Errorf("TestSequentialWrites at %s:%d", file, line)
	}
}

// checkFuncEntries checks that funcOffsets, which reads the names of the
// pclntab only, finds every function of a test binary where debug/gosym
// does, and that the binary's TestMain was found (testdata/gotests has
// one).
func checkFuncEntries(t *testing.T, bin string, lay Layout) {
	t.Helper()
	lines := lay.Lines()
	if lines == nil {
		t.Fatal("no line table")
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data, err := f.Section(".gopclntab").Data()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]uint64{}
	var names []string
	for _, fn := range lines.Funcs {
		if _, dup := want[fn.Name]; !dup {
			want[fn.Name] = fn.Entry
			names = append(names, fn.Name)
		}
	}
	rt0 := "_rt0_" + goarch(f.Machine) + "_linux"
	offsets, ok := funcOffsets(data, append(names, rt0))
	if !ok {
		t.Fatalf("funcOffsets does not read the pclntab of a %s binary", lay.GoVersion)
	}
	entry, found := offsets[rt0]
	base, err := goTextStart(f, f.Section(".text"), f.Section(".gopclntab"), data, entry, found)
	if err != nil {
		t.Fatalf("where Go's code starts: %v", err)
	}
	got := map[string]uint64{}
	for _, name := range names {
		if off, found := offsets[name]; found {
			got[name] = base + off
		}
	}
	if len(got) != len(want) {
		t.Errorf("funcOffsets found %d functions, debug/gosym %d", len(got), len(want))
	}
	for name, entry := range want {
		if got[name] != entry {
			t.Errorf("%s: entry %#x, debug/gosym says %#x", name, got[name], entry)
		}
	}
	if !lay.HasTestMain() {
		t.Error("TestMain not found")
	}
}

func TestFuncOffsetsOtherFormats(t *testing.T) {
	for _, tab := range [][]byte{nil, {0xf1, 0xff, 0xff, 0xff}, {0xfb, 0xff, 0xff, 0xff, 0, 0, 1, 8}, {0xf1, 0xff, 0xff, 0xff, 0, 0, 1, 4, 0, 0, 0, 0}} {
		if _, ok := funcOffsets(tab, []string{"main.main"}); ok {
			t.Errorf("funcOffsets(% x) read it", tab)
		}
	}
	// A header whose offsets lie past its end.
	tab := make([]byte, 72)
	copy(tab, []byte{0xf1, 0xff, 0xff, 0xff, 0, 0, 1, 8, 0xff, 0xff})
	if _, ok := funcOffsets(tab, []string{"main.main"}); ok {
		t.Error("funcOffsets read a header with offsets past its end")
	}
	// A function table too short for its nfunc+1 entries: neither reads
	// past the end (moduleText reads the first entry).
	short := make([]byte, 72)
	copy(short, []byte{0xf1, 0xff, 0xff, 0xff, 0, 0, 1, 8})
	short[8+3*8], short[8+7*8] = 8, 70 // nfunc 0, names at 8, table at 70
	if _, ok := funcOffsets(short, []string{"main.main"}); ok {
		t.Error("funcOffsets read a table of 2 bytes")
	}
	// Module data that matches the header in every other way.
	data := make([]byte, 256)
	for i, w := range map[int]uint64{0: 0x2000, 1: 0x2000 + 8, 16: 0x2000 + 70, 17: 1} {
		binary.LittleEndian.PutUint64(data[i*8:], w)
	}
	if _, ok := moduleText(data, 0x1000, short, 0x2000); ok {
		t.Error("moduleText found text with a table of 2 bytes")
	}
}

func TestRelease(t *testing.T) {
	for in, want := range map[string]string{"go1.26.8": "go1.26", "go1.26rc1": "go1.26", "go1.26": "go1.26", "go1.3": "go1.3", "devel": "devel"} {
		if got := release(in); got != want {
			t.Errorf("release(%q) = %q, want %q", in, got, want)
		}
	}
}

// What a Go test binary, linked as go test links them, waits for while
// paused at exec: reading its layout (go test -bench ReadLayout).
func BenchmarkRead(b *testing.B) {
	if _, err := exec.LookPath("go"); err != nil {
		b.Skip("needs the go command")
	}
	bin := filepath.Join(b.TempDir(), "gotests.test")
	cmd := exec.Command("go", "test", "-c", "-o", bin, "-ldflags=-s -w", ".")
	cmd.Dir = "../../testdata/gotests"
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go test -c: %v\n%s", err, out)
	}
	for b.Loop() {
		if _, err := Read(bin); err != nil {
			b.Fatal(err)
		}
	}
}
