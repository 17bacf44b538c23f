// Package integration runs the real writewatch binary against the real
// kernel: it loads the BPF programs, runs real processes and checks what
// was caught. It needs root (or CAP_BPF and CAP_PERFMON); without them
// every test skips and says why.
package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/writewatch/writewatch/internal/ops"
	"github.com/writewatch/writewatch/internal/session"
	"github.com/writewatch/writewatch/report"
)

var (
	wwBin  string // the writewatch binary under test
	opBin  string // integration/testdata/wwop
	binDir string
	skip   string // why these tests cannot run here
)

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	if os.Geteuid() != 0 {
		skip = "needs root to load BPF programs: run `sudo go test ./integration/`"
		return m.Run()
	}
	// The VM harness (make vmtest) brings binaries built beforehand.
	if ww, op := os.Getenv("WRITEWATCH_IT_BIN"), os.Getenv("WRITEWATCH_IT_WWOP"); ww != "" && op != "" {
		wwBin, opBin = ww, op
		return m.Run()
	}
	var err error
	binDir, err = os.MkdirTemp("", "writewatch-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(binDir)
	// Tests run COMMAND as another user too.
	if err := os.Chmod(binDir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	wwBin = filepath.Join(binDir, "writewatch")
	opBin = filepath.Join(binDir, "wwop")
	for bin, pkg := range map[string]string{wwBin: "../cmd/writewatch", opBin: "./testdata/wwop"} {
		out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput()
		if err != nil {
			fmt.Fprintf(os.Stderr, "build %s: %v\n%s", pkg, err, out)
			return 1
		}
	}
	return m.Run()
}

func requireRoot(t *testing.T) {
	t.Helper()
	if skip != "" {
		t.Skip(skip)
	}
}

// project makes a project directory outside the temp dir (which the
// default allowlist allows) with a config allowing only tests/**, plus an
// "outside" directory beside it. It returns both.
func project(t *testing.T) (root, outside string) {
	t.Helper()
	requireRoot(t)
	base, err := os.MkdirTemp("/var/tmp", "writewatch-it-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	// Resolve symlinks so expected paths match what the kernel reports.
	base, err = filepath.EvalSymlinks(base)
	if err != nil {
		t.Fatal(err)
	}
	root = filepath.Join(base, "proj")
	outside = filepath.Join(base, "outside")
	for _, d := range []string{root + "/tests/sub", outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(root, ".writewatch.yaml"), "allow:\n  - tests/**\n")
	return root, outside
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

type result struct {
	code     int
	rep      report.Report
	reported bool // rep was read from the run's report
	stderr   string
	stdout   string
}

// ww runs writewatch in dir with flags, then COMMAND, and reads the JSON
// report.
func ww(t *testing.T, dir string, flags []string, command ...string) result {
	t.Helper()
	return wwEnv(t, dir, nil, flags, command...)
}

// wwEnv is ww with extra environment variables for writewatch (and so
// for COMMAND).
func wwEnv(t *testing.T, dir string, env []string, flags []string, command ...string) result {
	t.Helper()
	return wwFiles(t, dir, env, nil, flags, command...)
}

// wwFiles is wwEnv with extra descriptors for writewatch from 3 on,
// which COMMAND inherits (descriptors opened outside the tree).
func wwFiles(t *testing.T, dir string, env []string, extra []*os.File, flags []string, command ...string) result {
	t.Helper()
	return wwWrapped(t, nil, dir, env, extra, flags, command...)
}

// wwWrapped is wwFiles with writewatch started by the command wrap
// (unshare ...), its arguments after wrap's.
func wwWrapped(t *testing.T, wrap []string, dir string, env []string, extra []*os.File, flags []string, command ...string) result {
	t.Helper()
	out := outDir(t, env)
	jsonPath := filepath.Join(out, "report.json")
	argv := append(slices.Clone(wrap), wwBin, "--json", jsonPath)
	argv = append(append(append(argv, flags...), "--"), command...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.ExtraFiles = dir, extra
	// Every run is recorded, and its recording replayed (checkReplay).
	recording := filepath.Join(t.TempDir(), "run.jsonl")
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "WRITEWATCH_RECORD="); ok {
			recording = v
		}
	}
	cmd.Env = append(append(os.Environ(), "WRITEWATCH_RECORD="+recording), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := result{stderr: stderr.String(), stdout: stdout.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		res.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run writewatch: %v", err)
	}
	if data, err := os.ReadFile(jsonPath); err == nil && len(data) > 0 {
		if err := json.Unmarshal(data, &res.rep); err != nil {
			t.Fatalf("parse report: %v\n%s", err, data)
		}
		res.reported = true
		checkReplay(t, recording, data)
	}
	// The kernel's count of refusals agrees with the records, in every
	// run, unless records were lost.
	if res.rep.LostRefusals > 0 && res.rep.LostWrites == 0 {
		t.Errorf("%d lost refusals, but no write record was lost\n%s", res.rep.LostRefusals, res.stderr)
	}
	return res
}

// outDir is a directory for writewatch's output files. Under sudo
// (SUDO_UID in env) writewatch opens them with the invoking user's
// rights, so the directory is that user's; t.TempDir() is root's, in a
// parent only root can enter.
func outDir(t *testing.T, env []string) string {
	t.Helper()
	uid, gid := -1, -1
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "SUDO_UID="); ok {
			uid, _ = strconv.Atoi(v)
		}
		if v, ok := strings.CutPrefix(e, "SUDO_GID="); ok {
			gid, _ = strconv.Atoi(v)
		}
	}
	if uid < 0 {
		return t.TempDir()
	}
	dir, err := os.MkdirTemp("", "writewatch-out-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chown(dir, uid, gid); err != nil {
		t.Fatal(err)
	}
	return dir
}

// key names one violation for comparisons.
type key struct{ op, path, role string }

func (k key) String() string { return fmt.Sprintf("%s %s %s", k.op, k.path, k.role) }

func keys(r report.Report) []key {
	var ks []key
	for _, v := range r.Violations {
		ks = append(ks, key{v.Op, v.Path, v.Role})
	}
	slices.SortFunc(ks, func(a, b key) int { return strings.Compare(a.String(), b.String()) })
	return ks
}

func violation(r report.Report, op, path string) *report.Violation {
	for i, v := range r.Violations {
		if v.Op == op && v.Path == path {
			return &r.Violations[i]
		}
	}
	return nil
}

// violationAt finds a violation at path, whatever its op: the
// filesystem witness may name a change the syscall records lost by
// another op (a write, a create) than the open that made it.
func violationAt(r report.Report, path string) *report.Violation {
	for i, v := range r.Violations {
		if v.Path == path {
			return &r.Violations[i]
		}
	}
	return nil
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

type syscallStat = syscall.Stat_t

// creatOp is the wwop operation that creates a file with the creat
// syscall, and the operation writewatch reports for it. An architecture
// without creat (arm64 has only openat) creates it as its C library's
// creat does, with an openat(O_CREAT|O_WRONLY|O_TRUNC): wwop write, an
// open.
func creatOp(t *testing.T) (wwopOp, reported string) {
	t.Helper()
	nrs, err := ops.Numbers(runtime.GOARCH, []string{"creat"})
	if err != nil {
		t.Fatal(err)
	}
	if len(nrs) == 0 {
		return "write", "open"
	}
	return "creat", "creat"
}

// checkReplay replays a run's recording with no kernel (package
// session) and checks that it gives the report the run wrote, byte for
// byte, but for what the command sets after the session (the exit code,
// its peak memory): what the session asks of the machine is all in the
// recording.
func checkReplay(t *testing.T, recording string, live []byte) {
	t.Helper()
	f, err := os.Open(recording)
	if err != nil {
		t.Errorf("the run was not recorded: %v", err)
		return
	}
	defer f.Close()
	rec, err := session.ReadRecording(f)
	if err != nil {
		t.Errorf("replay: %v", err)
		return
	}
	rep, err := rec.Replay()
	if err != nil {
		t.Errorf("replay: %v", err)
		return
	}
	var want report.Report
	if err := json.Unmarshal(live, &want); err != nil {
		t.Fatal(err)
	}
	rep.ExitCode, rep.PeakRSS = want.ExitCode, want.PeakRSS
	var got bytes.Buffer
	if err := report.WriteJSON(&got, rep); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), live) {
		t.Errorf("the replay of the run's recording gives another report:\n--- replay:\n%s\n--- run:\n%s", got.Bytes(), live)
	}
}
