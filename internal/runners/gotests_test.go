package runners

import (
	"slices"
	"testing"

	"github.com/writewatch/writewatch/internal/gobin"
)

// The tests a Go test binary runs, as its -test.run and -test.skip
// select them.
func TestSelectGoTests(t *testing.T) {
	var funcs []gobin.TestFunc
	for _, n := range []string{"TestA", "TestB", "TestSave", "TestSaveAll", "FuzzParse"} {
		funcs = append(funcs, gobin.TestFunc{Name: n})
	}
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"TestA", "TestB", "TestSave", "TestSaveAll", "FuzzParse"}},
		{[]string{"-test.paniconexit0", "-test.timeout=10m0s", "-test.v=true"}, []string{"TestA", "TestB", "TestSave", "TestSaveAll", "FuzzParse"}},
		{[]string{"-test.run=^TestSave$"}, []string{"TestSave"}},
		{[]string{"-test.run", "Save"}, []string{"TestSave", "TestSaveAll"}},
		{[]string{"--test.run=TestA|TestB/sub"}, []string{"TestA", "TestB"}},
		{[]string{"-test.run=Test(A|B)/x"}, []string{"TestA", "TestB"}},
		{[]string{"-test.run=/sub"}, []string{"TestA", "TestB", "TestSave", "TestSaveAll", "FuzzParse"}},
		{[]string{"-test.skip=Save"}, []string{"TestA", "TestB", "FuzzParse"}},
		{[]string{"-test.skip=TestSave/one"}, []string{"TestA", "TestB", "TestSave", "TestSaveAll", "FuzzParse"}},
		{[]string{"-test.run=Test", "-test.skip=^TestA$|Fuzz"}, []string{"TestB", "TestSave", "TestSaveAll"}},
		{[]string{"-test.run=^$"}, nil},
		{[]string{"-test.list=."}, nil},
	} {
		got, err := SelectGoTests(funcs, append([]string{"/tmp/b001/app.test"}, tt.args...))
		if err != nil {
			t.Errorf("%q: %v", tt.args, err)
			continue
		}
		var names []string
		for _, f := range got {
			names = append(names, f.Name)
		}
		if !slices.Equal(names, tt.want) {
			t.Errorf("%q: %v, want %v", tt.args, names, tt.want)
		}
	}
	if _, err := SelectGoTests(funcs, []string{"app.test", "-test.run=("}); err == nil {
		t.Error("a pattern that does not compile: no error")
	}
}
