package action

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"gopkg.in/yaml.v3"
)

// The workflows docs/ci.md gives, run as GitHub's runner would run them,
// on this machine, with a new user's suite: none of their words is
// copied here, so the test follows the page. make action-test runs it,
// as root (WRITEWATCH_CI_RECIPE=1): each workflow builds writewatch from
// this tree and runs it.
//
// The runner is played by what follows: a workspace and RUNNER_TEMP of
// their own for each run of a job, the GITHUB_* and RUNNER_* variables,
// the ${{ }} expressions the pages use (any other stops the test, to be
// taught here), run: steps by bash as the runner calls it, and the
// actions they use: actions/checkout (the project is in the workspace
// already; writewatch's repository is this tree), actions/setup-go (the
// go on PATH), actions/upload-artifact (the names and files are kept) and
// writewatch's own, from action.yml, step by step.
func TestCIRecipe(t *testing.T) {
	if os.Getenv("WRITEWATCH_CI_RECIPE") == "" {
		t.Skip("make action-test runs this (as root, with WRITEWATCH_CI_RECIPE=1)")
	}
	if os.Geteuid() != 0 {
		t.Fatal("the workflows run writewatch, which needs root here")
	}
	var flows []workflow
	for _, block := range codeBlocks(t, "../docs/ci.md", "yaml") {
		var wf workflow
		if err := yaml.Unmarshal([]byte(block), &wf); err != nil {
			t.Fatalf("docs/ci.md: %v\n%s", err, block)
		}
		if len(wf.Jobs) > 0 {
			wf.text = block
			flows = append(flows, wf)
		}
	}
	if len(flows) < 2 {
		t.Fatalf("docs/ci.md gives %d workflows, want the action's and the one with a step of its own", len(flows))
	}
	for i, wf := range flows {
		for name, j := range wf.Jobs {
			t.Run(strconv.Itoa(i+1)+"/"+name, func(t *testing.T) {
				checkJob(t, wf, name, j)
			})
		}
	}
}

// checkJob runs the job on a clean suite, on each leg of its matrix, and
// on a dirty one.
func checkJob(t *testing.T, wf workflow, name string, j job) {
	legs := j.legs(t)
	here := slices.IndexFunc(legs, func(l map[string]string) bool { return l["runner.arch"] == runnerArch(t) })
	if here < 0 {
		t.Skipf("no leg of job %s runs on %s", name, runtime.GOARCH)
	}
	// Each leg runs here, the other architecture's too: only its runner.*
	// and strategy.* values differ, and with them its artifact's name.
	names := map[string]int{}
	for i, leg := range legs {
		r := runJob(t, name, j, leg, false, "")
		if len(r.failed) > 0 {
			t.Fatalf("leg %d: a clean suite failed the job at %q:\n%s", i, r.failed, r.log.String())
		}
		r.checkUploads(t)
		for _, u := range r.uploads {
			if other, ok := names[u.name]; ok {
				t.Errorf("legs %d and %d upload the artifact %q: actions/upload-artifact@v4 refuses the second", other, i, u.name)
			}
			names[u.name] = i
		}
		if strings.Contains(wf.text, "vars.PUSHGATEWAY_URL") && !strings.Contains(r.log.String(), "--pushgateway is empty") {
			t.Errorf("leg %d: with PUSHGATEWAY_URL unset, writewatch did not say the push is off:\n%s", i, r.log.String())
		}
	}

	pushes := newPushgateway(t)
	r := runJob(t, name, j, legs[here], true, pushes.URL)
	if len(r.failed) != 1 || !strings.Contains(r.failed[0], "writewatch") {
		t.Fatalf("a dirty suite failed the job at %q, want the step that runs writewatch:\n%s", r.failed, r.log.String())
	}
	for _, where := range []struct{ what, text string }{{"the log", r.log.String()}, {"the step summary", r.summary()}} {
		if !strings.Contains(where.text, "TestWritesStrayFile") || !strings.Contains(where.text, "stray.txt") {
			t.Errorf("%s does not name the test and the file it wrote:\n%s", where.what, where.text)
		}
	}
	r.checkUploads(t)
	for _, u := range r.uploads {
		for _, p := range u.paths {
			if data, _ := os.ReadFile(p); !bytes.Contains(data, []byte("TestWritesStrayFile")) {
				t.Errorf("the artifact %s's %s does not name the test", u.name, p)
			}
		}
	}
	if strings.Contains(wf.text, "vars.PUSHGATEWAY_URL") {
		pushes.check(t, "/metrics/job/writewatch/", "/ci_job/"+name)
	}
}

type workflow struct {
	Jobs map[string]job `yaml:"jobs"`
	text string
}

type job struct {
	RunsOn   string `yaml:"runs-on"`
	Strategy struct {
		Matrix map[string][]string `yaml:"matrix"`
	} `yaml:"strategy"`
	Steps []step `yaml:"steps"`
}

type step struct {
	Name             string            `yaml:"name"`
	ID               string            `yaml:"id"`
	If               string            `yaml:"if"`
	Uses             string            `yaml:"uses"`
	Run              string            `yaml:"run"`
	Shell            string            `yaml:"shell"`
	WorkingDirectory string            `yaml:"working-directory"`
	Env              map[string]string `yaml:"env"`
	With             map[string]string `yaml:"with"`
}

func (s step) title() string {
	if s.Name != "" {
		return s.Name
	}
	if s.Uses != "" {
		return s.Uses
	}
	return s.Run
}

// legs returns the expression values of each leg of the job's matrix
// (one leg without a matrix).
func (j job) legs(t *testing.T) []map[string]string {
	t.Helper()
	if len(j.Strategy.Matrix) > 1 {
		t.Fatalf("a matrix of more than one dimension: teach TestCIRecipe")
	}
	var key string
	values := []string{""}
	for k, v := range j.Strategy.Matrix {
		key, values = k, v
	}
	var legs []map[string]string
	for i, v := range values {
		leg := map[string]string{
			"strategy.job-index": strconv.Itoa(i),
			"strategy.job-total": strconv.Itoa(len(values)),
		}
		if key != "" {
			leg["matrix."+key] = v
		}
		label := mustEval(t, j.RunsOn, leg)
		leg["runner.os"], leg["runner.arch"] = hostedRunner(t, label)
		legs = append(legs, leg)
	}
	return legs
}

// hostedRunner returns runner.os and runner.arch of a GitHub-hosted
// runner's label.
func hostedRunner(t *testing.T, label string) (string, string) {
	t.Helper()
	switch label {
	case "ubuntu-latest", "ubuntu-24.04", "ubuntu-22.04":
		return "Linux", "X64"
	case "ubuntu-24.04-arm", "ubuntu-22.04-arm":
		return "Linux", "ARM64"
	}
	t.Fatalf("runs-on %q: teach TestCIRecipe this runner", label)
	return "", ""
}

func runnerArch(t *testing.T) string {
	switch runtime.GOARCH {
	case "amd64":
		return "X64"
	case "arm64":
		return "ARM64"
	}
	t.Skipf("no GitHub runner is %s", runtime.GOARCH)
	return ""
}

// A run of a job: what its steps logged, uploaded and failed.
type run struct {
	t         *testing.T
	src       string // writewatch's repository: this tree
	workspace string
	temp      string
	env       []string // the runner's environment
	ctx       map[string]string
	log       bytes.Buffer
	uploads   []upload
	failed    []string // the steps that failed
	scripts   int
}

type upload struct {
	name  string
	paths []string
}

// runJob runs the job's steps in a new workspace holding a suite that
// writes only under t.TempDir(), or, dirty, one whose test also writes
// stray.txt in the package's directory.
func runJob(t *testing.T, name string, j job, leg map[string]string, dirty bool, pushgateway string) *run {
	t.Helper()
	src, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	// Outside /tmp, which writewatch allows by default.
	base, err := os.MkdirTemp("/var/tmp", "writewatch-recipe-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	r := &run{t: t, src: src, workspace: filepath.Join(base, "project"), temp: filepath.Join(base, "runner-temp")}
	must(t, os.MkdirAll(r.temp, 0o755))
	writeSuite(t, r.workspace, dirty)
	must(t, os.WriteFile(r.summaryFile(), nil, 0o644))
	r.ctx = map[string]string{
		"github.job":        name,
		"github.repository": "example/project",
		"github.workspace":  r.workspace,
		"runner.temp":       r.temp,
	}
	if pushgateway != "" {
		r.ctx["vars.PUSHGATEWAY_URL"] = pushgateway
	}
	for k, v := range leg {
		r.ctx[k] = v
	}
	r.env = runnerEnv(r, name)
	r.steps(j.Steps, r.ctx, nil, true)
	return r
}

// runnerEnv is this process's environment with the variables GitHub's
// runner sets for a step.
func runnerEnv(r *run, jobName string) []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return strings.HasPrefix(k, "GITHUB_") || strings.HasPrefix(k, "RUNNER_") || k == "PWD" || k == "OLDPWD" || k == "CI"
	})
	return append(env, "CI=true", "GITHUB_ACTIONS=true", "GITHUB_JOB="+jobName,
		"GITHUB_REPOSITORY="+r.ctx["github.repository"], "GITHUB_WORKSPACE="+r.workspace,
		"GITHUB_STEP_SUMMARY="+r.summaryFile(), "RUNNER_TEMP="+r.temp,
		"RUNNER_OS="+r.ctx["runner.os"], "RUNNER_ARCH="+r.ctx["runner.arch"])
}

func (r *run) summaryFile() string { return filepath.Join(r.temp, "_step_summary") }

func (r *run) summary() string {
	data, _ := os.ReadFile(r.summaryFile())
	return string(data)
}

// checkUploads checks that each artifact has a name and its files.
func (r *run) checkUploads(t *testing.T) {
	t.Helper()
	if len(r.uploads) == 0 {
		t.Errorf("the job uploaded no artifact")
	}
	for _, u := range r.uploads {
		if u.name == "" {
			t.Errorf("an artifact without a name: %q", u.paths)
		}
		for _, p := range u.paths {
			if st, err := os.Stat(p); err != nil || st.Size() == 0 {
				t.Errorf("the artifact %s lacks %s", u.name, p)
			}
		}
	}
}

// steps runs steps as the runner does: each whose if: holds (success()
// by default), those after a failure only with always() or failure().
// ctx holds the expression values; env, the variables of the step that
// uses a composite action, which its steps get. The job's own steps
// (top) that fail are noted.
func (r *run) steps(steps []step, ctx map[string]string, env map[string]string, top bool) (failed bool) {
	for _, st := range steps {
		cond := st.If
		if cond == "" {
			cond = "success()"
		}
		if !truthy(r.eval(cond, ctx, failed)) {
			r.log.WriteString("skipped: " + st.title() + "\n")
			continue
		}
		stepEnv := map[string]string{}
		for k, v := range env {
			stepEnv[k] = v
		}
		for k, v := range st.Env {
			stepEnv[k] = r.interpolate(v, ctx)
		}
		var outputs map[string]string
		var ok bool
		if st.Run != "" {
			outputs, ok = r.script(st, ctx, stepEnv)
		} else {
			outputs, ok = r.uses(st, ctx, stepEnv)
		}
		for k, v := range outputs {
			if st.ID != "" {
				ctx["steps."+st.ID+".outputs."+k] = v
			}
		}
		if !ok && top {
			r.failed = append(r.failed, st.title())
		}
		failed = failed || !ok
	}
	return failed
}

// script runs a run: step with bash, as the runner calls it, and returns
// what the step wrote to GITHUB_OUTPUT.
func (r *run) script(st step, ctx, env map[string]string) (map[string]string, bool) {
	r.scripts++
	file := filepath.Join(r.temp, "script-"+strconv.Itoa(r.scripts)+".sh")
	must(r.t, os.WriteFile(file, []byte(r.interpolate(st.Run, ctx)), 0o644))
	output := file + ".output"
	must(r.t, os.WriteFile(output, nil, 0o644))
	var args []string
	switch st.Shell {
	case "":
		args = []string{"-e", file}
	case "bash":
		args = []string{"--noprofile", "--norc", "-e", "-o", "pipefail", file}
	default:
		r.t.Fatalf("shell %q: teach TestCIRecipe", st.Shell)
	}
	cmd := exec.Command("bash", args...)
	cmd.Dir = r.workspace
	if d := r.interpolate(st.WorkingDirectory, ctx); d != "" {
		if !filepath.IsAbs(d) {
			d = filepath.Join(r.workspace, d)
		}
		cmd.Dir = d
	}
	cmd.Env = append(slices.Clone(r.env), "GITHUB_OUTPUT="+output)
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	fmt.Fprintf(&r.log, "run: %s\n", st.title())
	cmd.Stdout, cmd.Stderr = &r.log, &r.log
	err := cmd.Run()
	if err != nil {
		fmt.Fprintf(&r.log, "step %q: %v\n", st.title(), err)
	}
	return readOutputs(r.t, output), err == nil
}

func readOutputs(t *testing.T, path string) map[string]string {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			out[k] = v
		}
	}
	return out
}

// uses plays the actions the workflows use.
func (r *run) uses(st step, ctx, env map[string]string) (map[string]string, bool) {
	with := map[string]string{}
	for k, v := range st.With {
		with[k] = r.interpolate(v, ctx)
	}
	action, _, _ := strings.Cut(st.Uses, "@")
	switch {
	case action == "actions/checkout":
		if with["repository"] == "" {
			return nil, true // the project is in the workspace
		}
		if with["path"] == "" {
			r.t.Fatalf("%s checks out %s over the project", st.title(), with["repository"])
		}
		must(r.t, os.Symlink(r.src, filepath.Join(r.workspace, with["path"])))
		return nil, true
	case action == "actions/setup-go":
		if f := with["go-version-file"]; f != "" {
			_, err := os.Stat(filepath.Join(r.workspace, f))
			return nil, err == nil
		}
		return nil, true
	case action == "actions/upload-artifact":
		u := upload{name: with["name"]}
		for _, p := range strings.Split(with["path"], "\n") {
			if p = strings.TrimSpace(p); p != "" {
				if !filepath.IsAbs(p) {
					p = filepath.Join(r.workspace, p)
				}
				u.paths = append(u.paths, p)
			}
		}
		r.uploads = append(r.uploads, u)
		return nil, true
	case strings.HasSuffix(action, "/writewatch"):
		return r.composite(with, ctx, env)
	}
	r.t.Fatalf("uses: %s: teach TestCIRecipe this action", st.Uses)
	return nil, false
}

// composite runs writewatch's action from action.yml: its inputs from
// with and their defaults, its steps, its outputs.
func (r *run) composite(with, outer, env map[string]string) (map[string]string, bool) {
	m := readMetadata(r.t)
	ctx := map[string]string{"github.action_path": r.src}
	for k, v := range outer {
		if !strings.HasPrefix(k, "steps.") {
			ctx[k] = v
		}
	}
	for name, in := range m.Inputs {
		v, ok := with[name]
		switch {
		case !ok && in.Required:
			r.t.Fatalf("the action's required input %s is not given", name)
		case !ok && in.Default != nil:
			v = *in.Default
		}
		ctx["inputs."+name] = v
	}
	for name := range with {
		if _, ok := m.Inputs[name]; !ok {
			r.t.Fatalf("the action has no input %s", name)
		}
	}
	env = merged(env, map[string]string{"GITHUB_ACTION_PATH": r.src})
	failed := r.steps(m.Runs.Steps, ctx, env, false)
	outputs := map[string]string{}
	for name, o := range m.Outputs {
		outputs[name] = r.interpolate(o.Value, ctx)
	}
	return outputs, !failed
}

func merged(a, b map[string]string) map[string]string {
	m := map[string]string{}
	for k, v := range a {
		m[k] = v
	}
	for k, v := range b {
		m[k] = v
	}
	return m
}

var exprRE = regexp.MustCompile(`\$\{\{(.*?)\}\}`)

// interpolate replaces each ${{ EXPR }} in s by its value.
func (r *run) interpolate(s string, ctx map[string]string) string {
	return exprRE.ReplaceAllStringFunc(s, func(m string) string {
		return r.eval(exprRE.FindStringSubmatch(m)[1], ctx, false)
	})
}

func (r *run) eval(expr string, ctx map[string]string, failed bool) string {
	v, err := evalExpr(expr, ctx, failed)
	if err != nil {
		r.t.Fatalf("${{ %s }}: %v: teach TestCIRecipe", expr, err)
	}
	return v
}

func mustEval(t *testing.T, s string, ctx map[string]string) string {
	t.Helper()
	r := &run{t: t}
	return r.interpolate(s, ctx)
}

// evalExpr evaluates the part of GitHub's expressions the pages and
// action.yml use: values by name, 'strings', ==, != and && of them,
// always(), success() and failure(). An unset vars.X, or an output a
// step did not write, is ”.
func evalExpr(expr string, ctx map[string]string, failed bool) (string, error) {
	expr = strings.TrimSpace(expr)
	if m := exprRE.FindStringSubmatch(expr); m != nil && m[0] == expr {
		expr = strings.TrimSpace(m[1])
	}
	if strings.Contains(expr, "||") || strings.HasPrefix(expr, "!") && !strings.HasPrefix(expr, "!=") {
		return "", errUnknown
	}
	if parts := strings.Split(expr, "&&"); len(parts) > 1 {
		for _, p := range parts {
			v, err := evalExpr(p, ctx, failed)
			if err != nil || !truthy(v) {
				return "false", err
			}
		}
		return "true", nil
	}
	for _, op := range []string{"!=", "=="} {
		if a, b, ok := strings.Cut(expr, op); ok {
			x, err := evalExpr(a, ctx, failed)
			if err != nil {
				return "", err
			}
			y, err := evalExpr(b, ctx, failed)
			if err != nil {
				return "", err
			}
			return strconv.FormatBool(strings.EqualFold(x, y) == (op == "==")), nil
		}
	}
	switch {
	case expr == "always()":
		return "true", nil
	case expr == "success()":
		return strconv.FormatBool(!failed), nil
	case expr == "failure()":
		return strconv.FormatBool(failed), nil
	case len(expr) >= 2 && expr[0] == '\'' && expr[len(expr)-1] == '\'':
		return expr[1 : len(expr)-1], nil
	}
	if v, ok := ctx[expr]; ok {
		return v, nil
	}
	if strings.HasPrefix(expr, "vars.") || strings.HasPrefix(expr, "steps.") {
		return "", nil
	}
	return "", errUnknown
}

var errUnknown = errorString("not known here")

type errorString string

func (e errorString) Error() string { return string(e) }

func truthy(v string) bool { return v != "" && v != "false" && v != "0" }

// writeSuite writes a new user's Go module at dir, without a
// .writewatch.yaml: its test writes under t.TempDir(), and, dirty, a
// second test writes stray.txt in the package's directory.
func writeSuite(t *testing.T, dir string, dirty bool) {
	t.Helper()
	must(t, os.MkdirAll(dir, 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/project\n\ngo 1.24\n"), 0o644))
	src := `package project

import (
	"os"
	"path/filepath"
	"testing"
)

func TestSavesUnderTempDir(t *testing.T) {
	if err := os.WriteFile(filepath.Join(t.TempDir(), "out.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
}
`
	if dirty {
		src += `
func TestWritesStrayFile(t *testing.T) {
	if err := os.WriteFile("stray.txt", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
}
`
	}
	must(t, os.WriteFile(filepath.Join(dir, "project_test.go"), []byte(src), 0o644))
}

// pushgateway takes the pushes of a run.
type pushgateway struct {
	*httptest.Server
	mu    sync.Mutex
	paths []string
}

func newPushgateway(t *testing.T) *pushgateway {
	p := &pushgateway{}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body)
		p.mu.Lock()
		p.paths = append(p.paths, req.Method+" "+req.URL.Path)
		p.mu.Unlock()
	}))
	t.Cleanup(p.Close)
	return p
}

// check checks that a push came, to a path with each of parts.
func (p *pushgateway) check(t *testing.T, parts ...string) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, path := range p.paths {
		if !slices.ContainsFunc(parts, func(s string) bool { return !strings.Contains(path, s) }) {
			return
		}
	}
	t.Errorf("no push to a path with %q; pushes: %q", parts, p.paths)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
