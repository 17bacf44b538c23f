package gobin

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The test functions read from a binary linked as go test links it
// (no DWARF, no symbol table) are those its own -test.list lists, in
// the order its tests run, each at its line.
func TestTestFuncs(t *testing.T) {
	bin := buildTestBinary(t, "-ldflags=-s -w")
	lay, err := Read(bin)
	if err != nil {
		t.Fatal(err)
	}
	funcs, err := lay.TestFuncs()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range funcs {
		names = append(names, f.Name)
		if filepath.Base(f.File) != "gotests_test.go" || f.Line == 0 {
			t.Errorf("%s at %s:%d", f.Name, f.File, f.Line)
		}
	}
	want := []string{"TestSequentialWrites", "TestParallelWriter", "TestParallelClean", "TestWithSubtests",
		"TestGoroutineWrites", "TestChildProcessWrites", "TestCleanupWrites", "TestClean"}
	if !slices.Equal(names, want) {
		t.Errorf("TestFuncs: %v, want %v", names, want)
	}
	// The binary's own list (its TestMain writes a file where it runs).
	cmd := exec.Command(bin, "-test.list", ".")
	cmd.Dir = t.TempDir()
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if listed := strings.Fields(string(out)); !slices.Equal(listed, want) {
		t.Errorf("-test.list: %v, want %v", listed, want)
	}
}

func TestIsTestFunc(t *testing.T) {
	for name, want := range map[string]bool{
		"TestSave": true, "Test": true, "Test_x": true, "Test1": true, "FuzzParse": true, "TestÉté": true,
		"Testify": false, "TestMain": false, "TestSave.func1": false, "(*T).TestX": false, "TestG[...]": false,
		"BenchmarkX": false, "ExampleX": false, "Fuzzy": false, "helper": false,
	} {
		if got := isTestFunc(name); got != want {
			t.Errorf("isTestFunc(%q) = %v, want %v", name, got, want)
		}
	}
}
