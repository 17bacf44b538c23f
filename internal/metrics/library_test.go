package metrics

// writewatch writes the text format and makes the push itself (text.go,
// expose.go): the Prometheus client library's packages cost every start
// of writewatch their initialisation, metrics asked for or not
// (docs/performance.md). These tests hold the output to what the library,
// github.com/prometheus/client_golang, makes of the same metrics.

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/push"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
	"github.com/writewatch/writewatch/internal/live"
	"github.com/writewatch/writewatch/report"
)

// libraryCollector gives families to a client_golang registry, as
// constant metrics.
type libraryCollector []family

func (c libraryCollector) desc(f family) *prometheus.Desc {
	var names []string
	for _, l := range f.samples[0].labels {
		names = append(names, l.name)
	}
	return prometheus.NewDesc(f.name, f.help, names, nil)
}

func (c libraryCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, f := range c {
		ch <- c.desc(f)
	}
}

func (c libraryCollector) Collect(ch chan<- prometheus.Metric) {
	for _, f := range c {
		typ := prometheus.GaugeValue
		if f.typ == "counter" {
			typ = prometheus.CounterValue
		}
		d := c.desc(f)
		for _, s := range f.samples {
			var values []string
			for _, l := range s.labels {
				values = append(values, l.value)
			}
			ch <- prometheus.MustNewConstMetric(d, typ, s.value, values...)
		}
	}
}

// libraryRegistry registers fams in a pedantic registry, which checks
// them as it gathers them.
func libraryRegistry(t *testing.T, fams []family) *prometheus.Registry {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(libraryCollector(fams)); err != nil {
		t.Fatal(err)
	}
	return reg
}

// libraryText is the text the client library writes for fams.
func libraryText(t *testing.T, fams []family) []byte {
	t.Helper()
	mfs, err := libraryRegistry(t, fams).Gather()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// The text writewatch writes is, byte for byte, the client library's for
// the same metrics, and passes the library's lint (promtool's).
func TestTextIsTheLibrarys(t *testing.T) {
	livePopulated := New(fixed(liveSnapshot()), report.ModeGate, "dev")
	livePopulated.now = func() time.Time { return t1 }
	odd := "a\"b\\c\nd/é"
	for _, c := range []struct {
		name string
		fams []family
	}{
		{"clean", finished(cleanReport(), nil).families(nil, 0)},
		{"dirty", finished(dirtyReport(), nil).families(Labels{"repo": "writewatch", "branch": "feature/x"}, unixSeconds(t0))},
		{"live-not-started", New(new(live.Counters), report.ModeAudit, "dev").families(nil, 0)},
		{"live", livePopulated.families(Labels{"repo": "writewatch"}, 0)},
		{"escapes", []family{{
			name: NameLastCleanRun, help: "help with \\ and\na newline", typ: "gauge",
			samples: []sample{{labels: []labelPair{{"branch", odd}, {"repo", ""}}, value: 1.7959419715e+09}},
		}, {
			name: NameEvents, help: "events", typ: "gauge",
			samples: []sample{{value: math.Inf(1)}},
		}, {
			name: NameDuration, help: "duration", typ: "gauge",
			samples: []sample{{value: math.NaN()}},
		}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			sortFamilies(c.fams)
			var ours bytes.Buffer
			if err := writeText(&ours, c.fams); err != nil {
				t.Fatal(err)
			}
			if lib := libraryText(t, c.fams); !bytes.Equal(ours.Bytes(), lib) {
				t.Errorf("writewatch's text differs from the client library's:\n%s\nthe library's:\n%s", ours.Bytes(), lib)
			}
			problems, err := testutil.GatherAndLint(libraryRegistry(t, c.fams))
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range problems {
				t.Errorf("lint: %s: %s", p.Metric, p.Text)
			}
		})
	}
}

// pushed is a push as the Pushgateway gets it.
type pushed struct {
	method, contentType string
	grouping            map[string]string
	body                []byte
}

// recordPushes serves as a Pushgateway that keeps each push.
func recordPushes(t *testing.T) (*httptest.Server, <-chan pushed) {
	t.Helper()
	got := make(chan pushed, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		got <- pushed{req.Method, req.Header.Get("Content-Type"), groupingOf(t, req.URL.EscapedPath()), body}
	}))
	t.Cleanup(srv.Close)
	return srv, got
}

// groupingOf reads the grouping key of a push's path as the Pushgateway
// does: /metrics/NAME/VALUE..., NAME@base64 for a value in URL-safe
// base64.
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
		}
		g[name] = value
	}
	return g
}

// The push is the client library's push-add (push.Pusher.Add) in the text
// format: its method, grouping key, media type and body.
func TestPushIsTheLibrarys(t *testing.T) {
	srv, got := recordPushes(t)
	labels := Labels{"repo": "writewatch", "branch": "feature/x", "empty": ""}
	for _, rep := range []*report.Report{dirtyReport(), cleanReport()} {
		r := finished(rep, nil)
		must(t, r.Push(context.Background(), srv.URL, labels))
		ours := <-got

		p := push.New(srv.URL, Job).Gatherer(libraryRegistry(t, r.families(nil, 0))).Format(expfmt.NewFormat(expfmt.TypeTextPlain))
		for k, v := range labels {
			p.Grouping(k, v)
		}
		must(t, p.AddContext(context.Background()))
		lib := <-got

		if ours.method != lib.method || ours.contentType != lib.contentType {
			t.Errorf("%s %q, the library: %s %q", ours.method, ours.contentType, lib.method, lib.contentType)
		}
		if !maps.Equal(ours.grouping, lib.grouping) {
			t.Errorf("grouping %v, the library's %v", ours.grouping, lib.grouping)
		}
		if !bytes.Equal(ours.body, lib.body) {
			t.Errorf("body differs from the library's:\n%s\nthe library's:\n%s", ours.body, lib.body)
		}
	}
}

// writewatch's binary links none of the Prometheus libraries: their
// packages' initialisation (the client library's default registry and
// its Go and process collectors, procfs, protobuf's descriptors) would
// run at every start.
func TestBinaryLinksNoPrometheusLibrary(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "../../cmd/writewatch").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "github.com/prometheus/") || strings.HasPrefix(pkg, "google.golang.org/protobuf/") {
			t.Errorf("cmd/writewatch imports %s", pkg)
		}
	}
}
