package metrics

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/writewatch/writewatch/internal/live"
	"github.com/writewatch/writewatch/internal/outfile"
	"github.com/writewatch/writewatch/report"
)

func TestServeLiveThenFinal(t *testing.T) {
	live := liveSnapshot()
	r := New(fixed(live), report.ModeGate, "dev")
	srv, err := r.Serve("127.0.0.1:0", Labels{"repo": "writewatch"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	url := "http://" + srv.Addr().String() + "/metrics"

	body := get(t, url)
	promtoolCheck(t, body)
	mfs := parse(t, body)
	if got, _ := value(mfs, NameEvents, map[string]string{"repo": "writewatch"}); got != 321 {
		t.Errorf("live events %v, want 321", got)
	}
	if _, ok := mfs[NameExitCode]; ok {
		t.Error("exit code served while the run lasts")
	}

	r.Finish(dirtyReport(), nil)
	mfs = parse(t, get(t, url))
	if got, _ := value(mfs, NameExitCode, nil); got != 86 {
		t.Errorf("final exit code %v, want 86", got)
	}
	if got, _ := value(mfs, NameEvents, nil); got != 1234 {
		t.Errorf("final events %v, want the report's 1234", got)
	}

	if resp, err := http.Get("http://" + srv.Addr().String() + "/other"); err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("/other: %s", resp.Status)
		}
	}
	if err := srv.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if _, err := http.Get(url); err == nil {
		t.Error("still serving after Close")
	}
}

func get(t *testing.T, url string) []byte {
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

func TestServeBadAddress(t *testing.T) {
	r := New(new(live.Counters), report.ModeGate, "dev")
	if _, err := r.Serve("127.0.0.1:notaport", nil); err == nil {
		t.Error("Serve accepted a bad address")
	}
}

// The textfile keeps the last clean run's time across runs, per set of
// labels, and a clean run sets it anew.
func TestTextfileCarriesLastCleanRun(t *testing.T) {
	path := filepath.Join(t.TempDir(), "writewatch.prom")
	labels := Labels{"repo": "writewatch"}
	lastClean := func() (float64, bool) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return value(parse(t, data), NameLastCleanRun, nil)
	}

	if err := finished(dirtyReport(), nil).writeTextfileAt(t, path, labels); err != nil {
		t.Fatal(err)
	}
	if v, ok := lastClean(); ok {
		t.Fatalf("never clean, yet %s = %v", NameLastCleanRun, v)
	}

	clean := cleanReport()
	if err := finished(clean, nil).writeTextfileAt(t, path, labels); err != nil {
		t.Fatal(err)
	}
	want := unixSeconds(clean.Finished)
	if v, _ := lastClean(); v != want {
		t.Fatalf("after a clean run: %v, want %v", v, want)
	}

	dirty := dirtyReport()
	dirty.Started, dirty.Finished = t1.Add(time.Hour), t1.Add(2*time.Hour)
	if err := finished(dirty, nil).writeTextfileAt(t, path, labels); err != nil {
		t.Fatal(err)
	}
	if v, _ := lastClean(); v != want {
		t.Errorf("after a dirty run: %v, want the clean run's %v carried over", v, want)
	}
	data, _ := os.ReadFile(path)
	if v, _ := value(parse(t, data), NameLastRun, nil); v != unixSeconds(dirty.Finished) {
		t.Errorf("last run %v, want %v", v, unixSeconds(dirty.Finished))
	}
	promtoolCheck(t, data)

	// Other labels, another job: nothing carried over.
	if err := finished(dirtyReport(), nil).writeTextfileAt(t, path, Labels{"repo": "other"}); err != nil {
		t.Fatal(err)
	}
	if v, ok := lastClean(); ok {
		t.Errorf("carried %v over to other labels", v)
	}

	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("textfile mode: %v %v, want 0644 for node_exporter to read", st.Mode(), err)
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "*"))
	if len(left) != 1 {
		t.Errorf("files left beside the textfile: %v", left)
	}
}

// A reader polling the textfile while it is rewritten again and again
// always finds a whole file: the old one or the new one.
func TestTextfileIsNeverSeenHalfWritten(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "writewatch.prom")
	reports := []*report.Report{cleanReport(), dirtyReport()}
	// A bigger file makes a torn read likelier, were writes not atomic.
	var labels Labels
	must(t, labels.Set("padding="+strings.Repeat("x", 2000)))
	must(t, finished(reports[0], nil).writeTextfileAt(t, path, labels))

	var (
		stop  atomic.Bool
		reads atomic.Int64
		wg    sync.WaitGroup
		fail  = make(chan string, 1)
	)
	for range 2 {
		wg.Go(func() {
			for !stop.Load() {
				data, err := os.ReadFile(path)
				if err != nil {
					select {
					case fail <- "read: " + err.Error():
					default:
					}
					return
				}
				reads.Add(1)
				mfs, err := ParseText(strings.NewReader(string(data)))
				// Whole means parsed, and ending with the last family.
				if err == nil && mfs[NameViolations] == nil {
					err = errors.New("no " + NameViolations)
				}
				if err != nil || !strings.HasSuffix(string(data), "\n") {
					select {
					case fail <- "torn read (" + errString(err) + "):\n" + string(data):
					default:
					}
					return
				}
			}
		})
	}
	const writes = 150
	for i := range writes {
		if err := finished(reports[i%2], nil).writeTextfileAt(t, path, labels); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	wg.Wait()
	select {
	case msg := <-fail:
		t.Fatal(msg)
	default:
	}
	t.Logf("%d writes, %d whole reads", writes, reads.Load())
	if reads.Load() == 0 {
		t.Error("the readers read nothing")
	}
	data, err := os.ReadFile(path)
	must(t, err)
	promtoolCheck(t, data)
}

func errString(err error) string {
	if err == nil {
		return "parsed"
	}
	return err.Error()
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// writeTextfileAt writes the textfile at path, as writewatch does.
func (r *Run) writeTextfileAt(t *testing.T, path string, labels Labels) error {
	t.Helper()
	f, err := outfile.Open(path, outfile.Options{Mode: TextfileMode})
	if err != nil {
		return err
	}
	defer f.Close()
	return r.WriteTextfile(f, labels)
}

// A push is a POST (push-add) to /metrics/job/writewatch/<labels>, with
// no job or grouping label inside the metrics, and without the last clean
// run's time when the run is not clean, so the Pushgateway keeps it.
func TestPushRequest(t *testing.T) {
	type request struct {
		method, path string
		mfs          map[string]*dto.MetricFamily
	}
	got := make(chan request, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		mediatype, _, err := mime.ParseMediaType(req.Header.Get("Content-Type"))
		if err != nil {
			t.Errorf("content type: %v", err)
		}
		format := expfmt.NewFormat(expfmt.TypeProtoDelim)
		if mediatype == "text/plain" {
			format = expfmt.NewFormat(expfmt.TypeTextPlain)
		}
		dec := expfmt.NewDecoder(req.Body, format)
		mfs := map[string]*dto.MetricFamily{}
		for {
			var mf dto.MetricFamily
			if err := dec.Decode(&mf); err != nil {
				if err != io.EOF {
					t.Errorf("decode push: %v", err)
				}
				break
			}
			mfs[mf.GetName()] = &mf
		}
		got <- request{req.Method, req.URL.EscapedPath(), mfs}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()

	labels := Labels{"repo": "writewatch", "branch": "feature/x"}
	if err := finished(dirtyReport(), nil).Push(context.Background(), srv.URL, labels); err != nil {
		t.Fatal(err)
	}
	req := <-got
	if req.method != http.MethodPost {
		t.Errorf("method %s, want POST (push-add)", req.method)
	}
	branch := "branch@base64/" + base64.RawURLEncoding.EncodeToString([]byte("feature/x"))
	if !strings.HasPrefix(req.path, "/metrics/job/writewatch/") || !strings.Contains(req.path, branch) || !strings.Contains(req.path, "/repo/writewatch") {
		t.Errorf("path %s", req.path)
	}
	for name, mf := range req.mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "job" || labels[l.GetName()] != "" {
					t.Errorf("%s carries the grouping label %s", name, l.GetName())
				}
			}
		}
	}
	if _, ok := req.mfs[NameLastCleanRun]; ok {
		t.Errorf("a dirty run pushed %s", NameLastCleanRun)
	}
	if v, _ := sum(req.mfs, NameViolations, map[string]string{"op": "open", "action": "reported"}); v != 4 {
		t.Errorf("pushed open violations %v, want 4", v)
	}

	must(t, finished(cleanReport(), nil).Push(context.Background(), srv.URL, labels))
	if req := <-got; req.mfs[NameLastCleanRun] == nil {
		t.Errorf("a clean run did not push %s", NameLastCleanRun)
	}
}

func TestPushErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "inconsistent metrics", http.StatusBadRequest)
	}))
	defer srv.Close()
	err := finished(cleanReport(), nil).Push(context.Background(), srv.URL, nil)
	if err == nil || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), srv.URL) {
		t.Errorf("push to a refusing gateway: %v", err)
	}

	// A gateway that never answers is given up on with the context.
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer hang.Close()
	defer close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := finished(cleanReport(), nil).Push(ctx, hang.URL, nil); err == nil {
		t.Error("push to a hanging gateway succeeded")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("gave up after %v", d)
	}
}
