package tracer

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
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
func TestGoLayoutTable(t *testing.T) {
	lay, err := ReadGoLayout(buildTestBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	if !lay.FromDWARF {
		t.Fatal("go test -c kept no DWARF")
	}
	known, ok := goLayouts[release(runtime.Version())]
	if !ok {
		t.Fatalf("no goLayouts entry for %s; the DWARF says %+v", release(runtime.Version()), lay)
	}
	if known.GoidOff != lay.GoidOff || known.ParentGoidOff != lay.ParentGoidOff || known.NameOff != lay.NameOff {
		t.Errorf("goLayouts[%s] = %+v, DWARF says goid %d, parentGoid %d, name %d",
			release(runtime.Version()), known, lay.GoidOff, lay.ParentGoidOff, lay.NameOff)
	}
	if lay.Package != "example.com/gotests" {
		t.Errorf("package %q", lay.Package)
	}
}

// Every release in the table, checked against the DWARF of a test
// binary its own toolchain built (fetched from the Go module proxy), with
// the functions the uprobes hook present.
func TestGoLayoutTableReleases(t *testing.T) {
	for rel, known := range goLayouts {
		t.Run(rel, func(t *testing.T) {
			toolchain := rel + ".0"
			if rel == release(runtime.Version()) {
				toolchain = "" // the installed one: TestGoLayoutTable
			}
			lay, err := ReadGoLayout(buildTestBinaryWith(t, toolchain))
			if err != nil {
				t.Fatal(err)
			}
			if release(lay.GoVersion) != rel || !lay.FromDWARF {
				t.Fatalf("built by %s, DWARF %v", lay.GoVersion, lay.FromDWARF)
			}
			if known.GoidOff != lay.GoidOff || known.ParentGoidOff != lay.ParentGoidOff || known.NameOff != lay.NameOff {
				t.Errorf("goLayouts[%s] = %+v, DWARF says goid %d, parentGoid %d, name %d",
					rel, known, lay.GoidOff, lay.ParentGoidOff, lay.NameOff)
			}
			for _, p := range goProbes {
				if lay.funcs[p.symbol] == 0 {
					t.Errorf("no %s in a %s test binary", p.symbol, rel)
				}
			}
		})
	}
}

// A binary linked without DWARF and without a symbol table, as go test
// links them: offsets from the table, functions from the pclntab.
func TestGoLayoutStripped(t *testing.T) {
	lay, err := ReadGoLayout(buildTestBinary(t, "-ldflags=-s -w"))
	if err != nil {
		t.Fatal(err)
	}
	if lay.FromDWARF {
		t.Error("found DWARF in a -w binary")
	}
	for _, p := range goProbes {
		if lay.funcs[p.symbol] == 0 {
			t.Errorf("no file offset for %s", p.symbol)
		}
	}
	if lay.lines == nil {
		t.Fatal("no line table")
	}
	fn := lay.lines.LookupFunc("example.com/gotests.TestSequentialWrites")
	if fn == nil {
		t.Fatal("TestSequentialWrites not in the line table")
	}
	if file, line, _ := lay.lines.PCToLine(fn.Entry); filepath.Base(file) != "gotests_test.go" || line == 0 {
		t.Errorf("TestSequentialWrites at %s:%d", file, line)
	}
}

func TestRelease(t *testing.T) {
	for in, want := range map[string]string{"go1.26.8": "go1.26", "go1.26rc1": "go1.26", "go1.26": "go1.26", "go1.3": "go1.3", "devel": "devel"} {
		if got := release(in); got != want {
			t.Errorf("release(%q) = %q, want %q", in, got, want)
		}
	}
}
