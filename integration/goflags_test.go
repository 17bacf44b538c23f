package integration

import (
	"slices"
	"strings"
	"testing"
)

// GOFLAGS=-count=1 goes into the environment of a command that runs go
// only, and the note about it appears only when a go test would have
// printed a cached result without it.
func TestGoFlags(t *testing.T) {
	root, _, env := learnProject(t)
	res := wwEnv(t, root, env, nil, "/usr/bin/env")
	if strings.Contains(res.stdout, "GOFLAGS=-count=1") {
		t.Errorf("GOFLAGS set for a command that does not run go:\n%s", res.stdout)
	}
	res = wwEnv(t, root, env, nil, "sh", "-c", "go env GOFLAGS; exec env")
	if strings.Contains(res.stdout, "GOFLAGS=-count=1") {
		t.Errorf("GOFLAGS set for a shell that does not run go test:\n%s", res.stdout)
	}

	noted := func(r result) bool {
		return slices.ContainsFunc(r.rep.Notes, func(n string) bool { return strings.Contains(n, "GOFLAGS=-count=1 was added") })
	}
	res = wwEnv(t, root, env, nil, "go", "test", "-run", "TestScratch", "./...")
	if res.code != 86 || !noted(res) {
		t.Errorf("go test ./...: exit %d, notes %q; want 86 and the GOFLAGS note", res.code, res.rep.Notes)
	}
	res = wwEnv(t, root, env, nil, "go", "test", "-count=1", "-run", "TestScratch", "./...")
	if res.code != 86 || noted(res) {
		t.Errorf("go test -count=1 ./...: exit %d, notes %q; want 86 and no GOFLAGS note", res.code, res.rep.Notes)
	}
	res = wwEnv(t, root, env, nil, "go", "test", "-run", "TestScratch")
	if res.code != 86 || noted(res) {
		t.Errorf("go test in the package's directory (never cached): exit %d, notes %q; want 86 and no GOFLAGS note", res.code, res.rep.Notes)
	}
}
