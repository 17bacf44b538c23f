package tracer

import (
	"reflect"
	"testing"
)

// The Go test probe's name, which Incomplete leaves out, is its tag in
// the objects it loads into, and the generated programs are found by
// their tags.
func TestProgramNames(t *testing.T) {
	if f, ok := reflect.TypeFor[goTestObjects]().FieldByName("GoProbe"); !ok || f.Tag.Get("ebpf") != goProbeName {
		t.Errorf("goTestObjects.GoProbe's tag is not %q", goProbeName)
	}
	var names []string
	for _, np := range namedPrograms(&writewatchPrograms{}) {
		names = append(names, np.name)
	}
	if len(names) != 0 {
		t.Errorf("programs not loaded were named: %q", names)
	}
}
