package main

import (
	"os"
	"os/exec"
	"path/filepath"
)

// goSuiteSource is the short Go test suite: one package, seven tests,
// each writing under t.TempDir() only.
const goSuiteSource = "bench/testdata/gosuite"

// goSuiteWorkload is go test -count=1 on the short suite, copied into the
// project: what a developer's edit loop runs, where start-up and the
// pause of the test binary weigh most.
func (b *bench) goSuiteWorkload() workload {
	dir := filepath.Join(b.proj, "gosuite")
	return workload{
		name: "go test: a short suite (7 tests)", argv: []string{"go", "test", "-count=1", "."}, dir: dir,
		prepare: func() error { return copySuite(dir) },
		targets: []target{vsBare("≤ 1.15", ratioAtMost(1.15)), vsAudit("≤ 1.05× --audit", ratioAtMost(1.05))},
	}
}

// copySuite copies the suite into dir once; go test then finds it as it
// left it, its build cached.
func copySuite(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
		return nil
	}
	src, err := filepath.Abs(goSuiteSource)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return exec.Command("cp", "-R", src+"/.", dir).Run()
}
