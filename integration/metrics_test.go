package integration

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/writewatch/writewatch/internal/metrics"
)

// requireTool returns the path of a program from a Debian package,
// failing (not skipping) when it is missing: `make test` installs it.
func requireTool(t *testing.T, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s not found: run `make test-deps` as root, or `apt-get install -y %s`", name, pkg)
	}
	return p
}

// promtoolCheck runs `promtool check metrics` on text.
func promtoolCheck(t *testing.T, what string, text []byte) {
	t.Helper()
	cmd := exec.Command(requireTool(t, "promtool", "prometheus"), "check", "metrics")
	cmd.Stdin = bytes.NewReader(text)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics on %s: %v\n%s\non:\n%s", what, err, out, text)
	}
}

// freePort returns a loopback port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// pushgateway starts Debian's Pushgateway on a free loopback port, with
// persistence off, and stops it when the test ends. It returns its URL.
func pushgateway(t *testing.T) string {
	t.Helper()
	bin := requireTool(t, "prometheus-pushgateway", "prometheus-pushgateway")
	for attempt := 0; ; attempt++ {
		addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
		var log bytes.Buffer
		cmd := exec.Command(bin, "--web.listen-address="+addr, "--persistence.file=", "--log.level=warn")
		cmd.Stdout, cmd.Stderr = &log, &log
		must(t, cmd.Start())
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		url := "http://" + addr
		if waitReady(url+"/-/ready", exited) {
			t.Cleanup(func() {
				cmd.Process.Signal(syscall.SIGTERM)
				select {
				case <-exited:
				case <-time.After(5 * time.Second):
					cmd.Process.Kill()
					<-exited
				}
			})
			return url
		}
		cmd.Process.Kill()
		<-exited
		if attempt == 2 {
			t.Fatalf("the Pushgateway did not start on %s:\n%s", addr, log.String())
		}
	}
}

func waitReady(url string, exited <-chan struct{}) bool {
	client := &http.Client{Timeout: time.Second}
	for range 100 {
		select {
		case <-exited:
			return false
		default:
		}
		if resp, err := client.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return true
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

func scrape(t *testing.T, url string) []byte {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %v %s\n%s", url, err, resp.Status, body)
	}
	return body
}

// parseText parses metrics in the text format with the Prometheus
// libraries' own parser.
func parseText(r io.Reader) (map[string]*dto.MetricFamily, error) {
	p := expfmt.NewTextParser(model.LegacyValidation)
	return p.TextToMetricFamilies(r)
}

func parseMetrics(t *testing.T, text []byte) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := parseText(bytes.NewReader(text))
	if err != nil {
		t.Fatalf("parse metrics: %v\n%s", err, text)
	}
	return mfs
}

// sample finds the value of name whose labels are exactly want.
func sample(mfs map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
next:
	for _, m := range mfs[name].GetMetric() {
		if len(m.GetLabel()) != len(want) {
			continue
		}
		for _, l := range m.GetLabel() {
			if v, ok := want[l.GetName()]; !ok || v != l.GetValue() {
				continue next
			}
		}
		if m.Counter != nil {
			return m.GetCounter().GetValue(), true
		}
		return m.GetGauge().GetValue(), true
	}
	return 0, false
}

func with(base map[string]string, kv ...string) map[string]string {
	m := map[string]string{}
	for k, v := range base {
		m[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// A run pushes its violation counts to a real Pushgateway, grouped under
// job="writewatch" and the labels given; a later clean run, then a dirty
// one, keep the time of the last clean run meaningful.
func TestPushgateway(t *testing.T) {
	root, _ := project(t)
	gw := pushgateway(t)
	// A slash and a space in label values: both go in base64, which the
	// Pushgateway decodes (the client library would write the space as a
	// "+", which the Pushgateway keeps).
	flags := []string{"--pushgateway", gw, "--metrics-label", "repo=itest", "--metrics-label", "branch=feature/x", "--metrics-label", "ci_job=unit tests"}
	group := map[string]string{"job": "writewatch", "repo": "itest", "branch": "feature/x", "ci_job": "unit tests", "instance": ""}

	// Three writes to one stray file, one stray directory: both made by
	// the run and left behind.
	res := ww(t, root, flags, opBin, "write", "stray.txt", ",", "write", "stray.txt", ",", "append", "stray.txt", ",", "mkdir", "stray-dir", ",", "write", "tests/ok.txt")
	if res.code != 86 {
		t.Fatalf("exit code %d, want 86\n%s", res.code, res.stderr)
	}
	body := scrape(t, gw+"/metrics")
	mfs := parseMetrics(t, body)
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{metrics.NameViolations, with(group, "op", "open", "action", "reported", "severity", "left-behind"), 3},
		{metrics.NameViolations, with(group, "op", "mkdir", "action", "reported", "severity", "left-behind"), 1},
		{metrics.NameViolations, with(group, "op", "open", "action", "reported", "severity", "unknown"), 0},
		{metrics.NameViolations, with(group, "op", "unlink", "action", "reported", "severity", "unknown"), 0},
		{metrics.NameGroups, with(group, "op", "open", "action", "reported", "severity", "left-behind"), 1},
		{metrics.NameGroups, with(group, "op", "mkdir", "action", "reported", "severity", "left-behind"), 1},
		{metrics.NameEvents, group, float64(res.rep.Events)},
		{metrics.NameProcesses, group, float64(res.rep.Processes)},
		{metrics.NameLost, with(group, "cause", "ringbuf_full"), 0},
		{metrics.NameExitCode, group, 86},
		{metrics.NameCommandExit, group, 0},
		{metrics.NameInfo, with(group, "mode", "gate", "version", wwVersion(t)), 1},
	} {
		if got, ok := sample(mfs, c.name, c.labels); !ok || got != c.want {
			t.Errorf("%s%v = %v (found: %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	if _, ok := mfs[metrics.NameLastCleanRun]; ok {
		t.Errorf("%s pushed by a run with violations", metrics.NameLastCleanRun)
	}
	firstRun, _ := sample(mfs, metrics.NameLastRun, group)
	if firstRun < float64(time.Now().Add(-time.Minute).Unix()) {
		t.Errorf("%s = %v, not this run", metrics.NameLastRun, firstRun)
	}

	// A clean run sets the last clean run's time...
	if res := ww(t, root, flags, opBin, "write", "tests/ok.txt"); res.code != 0 {
		t.Fatalf("clean run: exit code %d\n%s", res.code, res.stderr)
	}
	mfs = parseMetrics(t, scrape(t, gw+"/metrics"))
	clean, ok := sample(mfs, metrics.NameLastCleanRun, group)
	if !ok {
		t.Fatalf("no %s after a clean run", metrics.NameLastCleanRun)
	}
	if v, ok := sample(mfs, metrics.NameViolations, with(group, "op", "open", "action", "reported", "severity", "unknown")); !ok || v != 0 {
		t.Errorf("open violations after the clean run: %v (found: %v), want 0", v, ok)
	}
	// The push replaced the first run's series.
	if v, ok := sample(mfs, metrics.NameViolations, with(group, "op", "open", "action", "reported", "severity", "left-behind")); ok {
		t.Errorf("the first run's left-behind open violations are still there after the clean run: %v", v)
	}
	// ...and a dirty run after it keeps it. It overwrites the file the
	// first run left: data loss.
	ww(t, root, flags, opBin, "write", "stray.txt")
	mfs = parseMetrics(t, scrape(t, gw+"/metrics"))
	if v, _ := sample(mfs, metrics.NameLastCleanRun, group); v != clean {
		t.Errorf("%s = %v after a dirty run, want the clean run's %v", metrics.NameLastCleanRun, v, clean)
	}
	if v, _ := sample(mfs, metrics.NameLastRun, group); v <= clean {
		t.Errorf("%s = %v, not after the clean run's %v", metrics.NameLastRun, v, clean)
	}
	if v, _ := sample(mfs, metrics.NameViolations, with(group, "op", "open", "action", "reported", "severity", "data-loss")); v != 1 {
		t.Errorf("open data-loss violations after the last run: %v, want 1", v)
	}

	// Another set of labels is another group.
	ww(t, root, []string{"--pushgateway", gw, "--metrics-label", "repo=other"}, "true")
	mfs = parseMetrics(t, scrape(t, gw+"/metrics"))
	other := map[string]string{"job": "writewatch", "repo": "other", "instance": ""}
	if v, ok := sample(mfs, metrics.NameExitCode, other); !ok || v != 0 {
		t.Errorf("other group: exit code %v (found: %v)", v, ok)
	}
	if _, ok := sample(mfs, metrics.NameExitCode, group); !ok {
		t.Error("the first group is gone")
	}
}

// A push that fails is reported and, unless --metrics-required, leaves
// the exit code alone.
func TestPushFailure(t *testing.T) {
	root, _ := project(t)
	dead := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	for _, c := range []struct {
		flags []string
		cmd   []string
		want  int
	}{
		{[]string{"--pushgateway", dead}, []string{"true"}, 0},
		{[]string{"--pushgateway", dead}, []string{"sh", "-c", "exit 3"}, 3},
		{[]string{"--pushgateway", dead, "--metrics-required"}, []string{"true"}, 70},
		{[]string{"--pushgateway", dead, "--metrics-required"}, []string{"sh", "-c", "exit 3"}, 70},
		// Violations stay the louder news.
		{[]string{"--pushgateway", dead, "--metrics-required"}, []string{opBin, "write", "stray.txt"}, 86},
	} {
		res := ww(t, root, c.flags, c.cmd...)
		if res.code != c.want {
			t.Errorf("%v %v: exit code %d, want %d\n%s", c.flags, c.cmd, res.code, c.want, res.stderr)
		}
		if !strings.Contains(res.stderr, "writewatch: --pushgateway: push to "+dead) {
			t.Errorf("%v: the failed push is not reported:\n%s", c.flags, res.stderr)
		}
	}
}

// /metrics is served while COMMAND runs, shows the run so far, and passes
// promtool's checks.
func TestMetricsEndpointDuringRun(t *testing.T) {
	root, _ := project(t)
	goMark := filepath.Join(root, "tests", "go")
	cmd := exec.Command(wwBin, "--metrics-addr", "127.0.0.1:0", "--metrics-label", "repo=itest", "--",
		"sh", "-c", `echo x > stray.txt; mkdir stray-dir; while [ ! -e tests/go ]; do sleep 0.05; done`)
	cmd.Dir = root
	stderr, err := cmd.StderrPipe()
	must(t, err)
	must(t, cmd.Start())
	defer func() {
		os.WriteFile(goMark, nil, 0o644)
		cmd.Wait()
	}()
	sc := bufio.NewScanner(stderr)
	if !sc.Scan() {
		t.Fatal("writewatch printed nothing")
	}
	first := sc.Text()
	_, url, ok := strings.Cut(first, "serving metrics on ")
	if !ok {
		t.Fatalf("first line %q does not say where metrics are served", first)
	}
	var rest bytes.Buffer
	copied := make(chan struct{})
	go func() { io.Copy(&rest, stderr); close(copied) }()

	labels := map[string]string{"repo": "itest"}
	var body []byte
	for i := 0; ; i++ {
		body = scrape(t, url)
		mfs := parseMetrics(t, body)
		// Severity is decided at the end: unknown while the run lasts.
		open, _ := sample(mfs, metrics.NameViolations, with(labels, "op", "open", "action", "reported", "severity", "unknown"))
		mkdir, _ := sample(mfs, metrics.NameViolations, with(labels, "op", "mkdir", "action", "reported", "severity", "unknown"))
		if open == 1 && mkdir == 1 {
			if d, _ := sample(mfs, metrics.NameDuration, labels); d <= 0 {
				t.Errorf("duration %v while running", d)
			}
			if p, _ := sample(mfs, metrics.NameProcesses, labels); p < 2 {
				t.Errorf("%v processes traced, want at least sh and mkdir", p)
			}
			if _, ok := mfs[metrics.NameExitCode]; ok {
				t.Error("an exit code while COMMAND runs")
			}
			break
		}
		if i == 100 {
			t.Fatalf("the violations never showed on /metrics:\n%s", body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	promtoolCheck(t, "/metrics", body)

	must(t, os.WriteFile(goMark, nil, 0o644))
	err = cmd.Wait()
	<-copied
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 86 {
		t.Errorf("exit: %v, want 86\n%s", err, rest.String())
	}
	if _, err := http.Get(url); err == nil {
		t.Error("/metrics still served after writewatch exited")
	}
}

// The textfile is written at the end of each run; a reader polling it
// while runs follow each other always reads a whole file, which promtool
// accepts, and the last clean run's time carries over a dirty run.
func TestTextfileDuringRuns(t *testing.T) {
	root, _ := project(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "writewatch.prom")
	flags := []string{"--metrics-textfile", path, "--metrics-label", "repo=itest"}

	var (
		stop  atomic.Bool
		reads atomic.Int64
		wg    sync.WaitGroup
		torn  atomic.Pointer[string]
	)
	wg.Go(func() {
		for !stop.Load() {
			data, err := os.ReadFile(path)
			if os.IsNotExist(err) {
				continue
			}
			if err == nil {
				_, err = parseText(bytes.NewReader(data))
			}
			if err == nil && !bytes.Contains(data, []byte(metrics.NameViolations+"{")) {
				err = fmt.Errorf("no %s", metrics.NameViolations)
			}
			if err != nil {
				msg := fmt.Sprintf("%v:\n%s", err, data)
				torn.Store(&msg)
				return
			}
			reads.Add(1)
		}
	})
	lastClean := func() (float64, bool) {
		data, err := os.ReadFile(path)
		must(t, err)
		return sample(parseMetrics(t, data), metrics.NameLastCleanRun, map[string]string{"repo": "itest"})
	}

	runs := []struct {
		cmd   []string
		code  int
		clean bool
	}{
		{[]string{opBin, "write", "stray.txt"}, 86, false},
		{[]string{opBin, "write", "tests/ok.txt"}, 0, true},
		{[]string{opBin, "write", "stray.txt", ",", "mkdir", "stray-dir"}, 86, false},
		{[]string{"sh", "-c", "exit 4"}, 4, true},
		{[]string{opBin, "unlink", "stray.txt"}, 86, false},
	}
	var clean float64
	for i, r := range runs {
		res := ww(t, root, flags, r.cmd...)
		if res.code != r.code {
			t.Fatalf("run %d: exit code %d, want %d\n%s", i, res.code, r.code, res.stderr)
		}
		v, ok := lastClean()
		switch {
		case r.clean && (!ok || v <= clean):
			t.Errorf("run %d is clean: %s = %v (found %v), want after %v", i, metrics.NameLastCleanRun, v, ok, clean)
		case !r.clean && clean == 0 && ok:
			t.Errorf("run %d: %s = %v before any clean run", i, metrics.NameLastCleanRun, v)
		case !r.clean && clean != 0 && v != clean:
			t.Errorf("run %d: %s = %v, want %v carried over", i, metrics.NameLastCleanRun, v, clean)
		}
		if r.clean {
			clean = v
		}
	}
	stop.Store(true)
	wg.Wait()
	if msg := torn.Load(); msg != nil {
		t.Fatalf("a reader saw a half-written textfile: %s", *msg)
	}
	t.Logf("%d whole reads during %d runs", reads.Load(), len(runs))
	if reads.Load() == 0 {
		t.Error("the reader read nothing")
	}
	data, err := os.ReadFile(path)
	must(t, err)
	promtoolCheck(t, "the textfile", data)
	mfs := parseMetrics(t, data)
	// The last run removed a file from an earlier run: data loss.
	if v, _ := sample(mfs, metrics.NameViolations, map[string]string{"repo": "itest", "op": "unlink", "action": "reported", "severity": "data-loss"}); v != 1 {
		t.Errorf("last run's unlink data-loss violations: %v, want 1", v)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("files beside the textfile: %v", entries)
	}
}

// A textfile in a directory that does not exist stops writewatch before
// COMMAND runs.
func TestTextfileBadPath(t *testing.T) {
	root, _ := project(t)
	mark := filepath.Join(root, "tests", "ran")
	res := ww(t, root, []string{"--metrics-textfile", filepath.Join(root, "no-such-dir", "x.prom")}, "touch", mark)
	if res.code != 2 || exists(mark) {
		t.Errorf("exit code %d (want 2), COMMAND ran: %v\n%s", res.code, exists(mark), res.stderr)
	}
}

// A COMMAND that cannot start still leaves metrics: writewatch's exit
// code, the run's time, not clean, and no COMMAND exit code.
func TestTextfileWhenCommandNeverRuns(t *testing.T) {
	root, _ := project(t)
	path := filepath.Join(t.TempDir(), "writewatch.prom")
	res := ww(t, root, []string{"--metrics-textfile", path, "--metrics-label", "repo=itest"}, "no-such-command-here")
	if res.code != 127 {
		t.Fatalf("exit code %d, want 127\n%s", res.code, res.stderr)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no textfile for a run whose COMMAND was not found: %v\n%s", err, res.stderr)
	}
	promtoolCheck(t, "the textfile", data)
	mfs := parseMetrics(t, data)
	labels := map[string]string{"repo": "itest"}
	if v, ok := sample(mfs, metrics.NameExitCode, labels); !ok || v != 127 {
		t.Errorf("%s = %v (found %v), want 127", metrics.NameExitCode, v, ok)
	}
	if _, ok := sample(mfs, metrics.NameLastRun, labels); !ok {
		t.Errorf("no %s", metrics.NameLastRun)
	}
	if _, ok := sample(mfs, metrics.NameCommandExit, labels); ok {
		t.Errorf("%s present, but COMMAND never ran", metrics.NameCommandExit)
	}
	if _, ok := sample(mfs, metrics.NameLastCleanRun, labels); ok {
		t.Errorf("%s present, but the run was not clean", metrics.NameLastCleanRun)
	}
}
