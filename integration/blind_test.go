package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/writewatch/writewatch/internal/report"
)

// blindScript stops writewatch (COMMAND's parent), floods the ring buffer
// with allowed writes, writes config.toml in the project's root by a name
// longer than any record of the flood (so that its record cannot fit in
// what the flood left), and lets writewatch go on.
func blindScript(tmp string) string {
	longConfig := strings.Repeat("./", 1990) + "config.toml"
	return fmt.Sprintf(`
kill -STOP $PPID
%[1]s spin-churn %[2]s 1 & %[1]s spin-churn %[2]s 1 &
wait
%[1]s write %[3]s
kill -CONT $PPID`, opBin, tmp, longConfig)
}

// A run that could not see everything does not pass: COMMAND stops
// writewatch, floods the ring buffer, writes outside the allowlist and
// lets writewatch go on. The write's record is lost; the run exits with
// 88 (or 86, had the write been seen), says why in the report, the
// JUnit report and the metrics, and passes only with --accept-incomplete.
func TestBlindRunDoesNotPass(t *testing.T) {
	root, _ := project(t)
	tmp := t.TempDir()
	out := t.TempDir()
	junit, prom := filepath.Join(out, "ww.xml"), filepath.Join(out, "ww.prom")
	res := ww(t, root, []string{"--ringbuf-mib", "1", "--junit", junit, "--metrics-textfile", prom}, "sh", "-c", blindScript(tmp))
	if !exists(filepath.Join(root, "config.toml")) {
		t.Fatal("the script did not write config.toml")
	}
	if res.rep.LostWrites == 0 {
		t.Fatalf("no write record was lost (lost %v): the test proves nothing\n%s", res.rep.Lost, res.stderr)
	}
	seen := violationAt(res.rep, filepath.Join(root, "config.toml")) != nil
	switch {
	case seen && res.code != 86:
		t.Errorf("config.toml's write was seen: exit code %d, want 86\n%s", res.code, res.stderr)
	case !seen && res.code != 88:
		t.Errorf("exit code %d, want 88: the run lost %d write records and cannot pass\n%s", res.code, res.rep.LostWrites, res.stderr)
	}
	if len(res.rep.Incomplete) == 0 || !strings.Contains(res.rep.Incomplete[0], "write record") {
		t.Errorf("the report's incomplete %q does not say write records were lost", res.rep.Incomplete)
	}
	if res.rep.ExitCode != res.code {
		t.Errorf("the report's exit_code %d, writewatch exited with %d", res.rep.ExitCode, res.code)
	}
	// Each reason is a "not seen" line, whether a violation was seen or not.
	if !strings.Contains(res.stderr, "writewatch: not seen: ") || !strings.Contains(res.stderr, "may have gone unseen") {
		t.Errorf("the summary does not say writewatch could not see everything:\n%s", res.stderr)
	}
	if data, err := os.ReadFile(junit); err != nil || !strings.Contains(string(data), `<testcase name="writewatch: incomplete"`) {
		t.Errorf("the JUnit report has no failing testcase for the blind run (%v):\n%s", err, data)
	}
	if data, err := os.ReadFile(prom); err != nil || !strings.Contains(string(data), "\nwritewatch_incomplete 1\n") {
		t.Errorf("the metrics textfile has no writewatch_incomplete 1 (%v)", err)
	}

	// --accept-incomplete gives COMMAND's own code back, unless a
	// violation was seen.
	os.Remove(filepath.Join(root, "config.toml"))
	res = ww(t, root, []string{"--ringbuf-mib", "1", "--accept-incomplete"}, "sh", "-c", blindScript(tmp)+"\nexit 3")
	if res.rep.LostWrites == 0 {
		t.Fatalf("no write record was lost: the test proves nothing\n%s", res.stderr)
	}
	want := 3
	if violationAt(res.rep, filepath.Join(root, "config.toml")) != nil {
		want = 86
	}
	if res.code != want {
		t.Errorf("--accept-incomplete: exit code %d, want %d\n%s", res.code, want, res.stderr)
	}
	if len(res.rep.Incomplete) == 0 {
		t.Error("--accept-incomplete: the report no longer says the run was incomplete")
	}
}

// Under --audit, a blind run keeps COMMAND's code, and the report says
// it was blind.
func TestBlindRunAudit(t *testing.T) {
	root, _ := project(t)
	res := ww(t, root, []string{"--ringbuf-mib", "1", "--audit"}, "sh", "-c", blindScript(t.TempDir()))
	if res.rep.LostWrites == 0 {
		t.Fatalf("no write record was lost: the test proves nothing\n%s", res.stderr)
	}
	if res.code != 0 {
		t.Errorf("--audit: exit code %d, want COMMAND's 0\n%s", res.code, res.stderr)
	}
	if len(res.rep.Incomplete) == 0 || res.rep.Mode != report.ModeAudit {
		t.Errorf("--audit: incomplete %q in mode %q, want a reason", res.rep.Incomplete, res.rep.Mode)
	}
}
