package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/writewatch/writewatch/internal/ops"
	"github.com/writewatch/writewatch/report"
)

func writeReport(t *testing.T, fs []finding) string {
	t.Helper()
	rep := report.Report{Version: report.SchemaVersion, ExitCode: 86}
	for _, f := range fs {
		rep.Violations = append(rep.Violations, report.Violation{Op: f.op, Path: f.path, Who: report.Who{Test: f.test}})
	}
	data, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "report.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestCheck(t *testing.T) {
	wd, _ := os.Getwd()
	root, _ := filepath.EvalSymlinks(wd)
	want := expected(root)

	var out bytes.Buffer
	if err := check(&out, writeReport(t, want), "86"); err != nil {
		t.Fatalf("the expected report failed: %v", err)
	}
	if !strings.Contains(out.String(), "testdata/sample/debug-output.txt (TestWritesStrayFileInRoot)") {
		t.Errorf("output:\n%s", out.String())
	}

	extra := append(want[1:], finding{ops.Open.String(), filepath.Join(root, "go.sum"), ""})
	err := check(&out, writeReport(t, extra), "86")
	if err == nil || !strings.Contains(err.Error(), "missing:    open  "+want[0].path) ||
		!strings.Contains(err.Error(), "unexpected: open  "+filepath.Join(root, "go.sum")) {
		t.Errorf("a report with one write missing and one extra: %v", err)
	}

	wrongTest := append([]finding{}, want...)
	wrongTest[0].test = ""
	if err := check(&out, writeReport(t, wrongTest), "86"); err == nil {
		t.Error("a write without its test passed")
	}

	if err := check(&out, writeReport(t, want), "87"); err == nil || !strings.Contains(err.Error(), "cannot trace here") {
		t.Errorf("exit 87: %v", err)
	}
	if err := check(&out, writeReport(t, nil), "0"); err == nil || !strings.Contains(err.Error(), "no write outside the allowlist") {
		t.Errorf("exit 0: %v", err)
	}
}
