package metrics

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/writewatch/writewatch/internal/live"
	"github.com/writewatch/writewatch/report"
)

// The metrics pass a pedantic registry's checks (each sample described,
// consistent labels) and the library's lint (promtool's), live and final.
func TestCollectorLint(t *testing.T) {
	livePopulated := New(fixed(liveSnapshot()), report.ModeGate, "dev")
	livePopulated.now = func() time.Time { return t1 }
	for _, c := range []struct {
		name    string
		run     *Run
		labels  Labels
		carried float64
	}{
		{"clean", finished(cleanReport(), nil), nil, 0},
		{"dirty", finished(dirtyReport(), nil), Labels{"repo": "writewatch", "branch": "feature/x"}, unixSeconds(t0)},
		{"live-not-started", New(new(live.Counters), report.ModeAudit, "dev"), nil, 0},
		{"live", livePopulated, Labels{"repo": "writewatch", "odd": "a\"b\\c\nd/é", "empty": ""}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			reg := prometheus.NewPedanticRegistry()
			must(t, reg.Register(c.run.collector(c.labels, c.carried)))
			if _, err := reg.Gather(); err != nil {
				t.Fatal(err)
			}
			problems, err := testutil.GatherAndLint(reg)
			must(t, err)
			for _, p := range problems {
				t.Errorf("lint: %s: %s", p.Metric, p.Text)
			}
		})
	}
}

// A sample the library refuses fails the gathering, rather than
// vanishing or panicking.
func TestCollectorRefusedSample(t *testing.T) {
	bad := New(fixed(liveSnapshot()), report.ModeGate, "dev\xff")
	if err := bad.WriteText(io.Discard, nil, 0); err == nil || !strings.Contains(err.Error(), NameInfo) {
		t.Errorf("a version that is not UTF-8: %v", err)
	}
}

// Label values with the characters the text format escapes read back the
// same, by the Prometheus parser and by readLastClean.
func TestTextEscapes(t *testing.T) {
	odd := "a\"b\\c\nd/é"
	labels := Labels{"branch": odd, "repo": ""}
	r := finished(cleanReport(), nil)
	body := text(t, r, labels, 0)
	mfs := parse(t, body)
	if v, ok := value(mfs, NameEvents, map[string]string{"branch": odd}); !ok || v != 1234 {
		t.Errorf("Prometheus parser: %v %v\n%s", v, ok, body)
	}
	want := unixSeconds(cleanReport().Finished)
	if got := readLastClean(bytes.NewReader(body), labels); got != want {
		t.Errorf("readLastClean %v, want %v\n%s", got, want, body)
	}
	if got := readLastClean(bytes.NewReader(body), Labels{"branch": odd}); got != 0 {
		t.Errorf("readLastClean with other labels %v, want 0", got)
	}
}

// A textfile the parser refuses, or without the metric, carries nothing
// over; one from a writer that gave no TYPE line does.
func TestReadLastClean(t *testing.T) {
	for text, want := range map[string]float64{
		"":                                 0,
		"garbage\n":                        0,
		NameLastCleanRun + `{repo="x"} 12`: 0,
		NameLastCleanRun + `{repo="x"} 12` + "\n" + NameLastCleanRun + `{repo="x",` + "\n":                0,
		NameLastCleanRun + `{repo="x"} -5` + "\n":                                                         0,
		NameLastCleanRun + "{repo=\"x\"} 12\n":                                                            12,
		"# TYPE " + NameLastCleanRun + " gauge\n" + NameLastCleanRun + "{repo=\"x\"} 1.5 1700000000000\n": 1.5,
	} {
		if got := readLastClean(strings.NewReader(text), Labels{"repo": "x"}); got != want {
			t.Errorf("readLastClean(%q) = %v, want %v", text, got, want)
		}
	}
}

// recordPushes serves as a Pushgateway that keeps the path of each push.
func recordPushes(t *testing.T) (*httptest.Server, <-chan string) {
	t.Helper()
	got := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		io.Copy(io.Discard, req.Body)
		got <- req.URL.EscapedPath()
	}))
	t.Cleanup(srv.Close)
	return srv, got
}

// groupingOf reads the grouping key of a push's path as the Pushgateway
// does: /metrics/NAME/VALUE..., NAME@base64 for a value in URL-safe
// base64 ("=" for an empty one), other values path-unescaped (a "+" stays
// a "+").
func groupingOf(t *testing.T, path string) map[string]string {
	parts := strings.Split(strings.TrimPrefix(path, "/metrics/"), "/")
	if len(parts)%2 != 0 {
		t.Errorf("push path %s: odd number of components", path)
		return nil
	}
	g := map[string]string{}
	for i := 0; i < len(parts); i += 2 {
		name, value := parts[i], parts[i+1]
		if n, ok := strings.CutSuffix(name, "@base64"); ok {
			b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(value, "="))
			if err != nil {
				t.Errorf("push path %s: %v", path, err)
			}
			name, value = n, string(b)
		} else if v, err := url.PathUnescape(value); err == nil {
			value = v
		} else {
			t.Errorf("push path %s: %v", path, err)
		}
		g[name] = value
	}
	return g
}

// Every label value arrives as it was given: a space is not read back as
// a "+", nor a "+" as a space; a slash, an empty value, others that the
// URL escapes. Plain values stay readable in the path.
func TestPushGroupingValues(t *testing.T) {
	srv, got := recordPushes(t)
	labels := Labels{
		"ci_job": "unit tests", "plus": "a+b", "branch": "feature/x", "empty": "",
		"pct": "100%", "utf8": "é", "q": "a?b#c&d=e", "repo": "writewatch", "dots": "v1.2-rc_3~x",
	}
	must(t, finished(cleanReport(), nil).Push(context.Background(), srv.URL, labels))
	path := <-got
	want := maps.Clone(map[string]string(labels))
	want["job"] = Job
	if g := groupingOf(t, path); !maps.Equal(g, want) {
		t.Errorf("push path %s\ngrouping %v\nwant     %v", path, g, want)
	}
	for _, plain := range []string{"/job/writewatch", "/repo/writewatch", "/dots/v1.2-rc_3~x"} {
		if !strings.Contains(path, plain) {
			t.Errorf("push path %s: no %s", path, plain)
		}
	}
}
