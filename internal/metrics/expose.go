package metrics

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/writewatch/writewatch/internal/outfile"
)

// Handler serves the run's metrics in the Prometheus text format, each
// with labels as constant labels.
func (r *Run) Handler(labels Labels) (http.Handler, error) {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", textContentType)
		writeText(w, r.families(labels, 0))
	}), nil
}

// Server serves /metrics while a run lasts.
type Server struct {
	srv  *http.Server
	ln   net.Listener
	done chan error

	closeOnce sync.Once
	closeErr  error
}

// Serve listens on addr (host:port; port 0 picks a free one) and serves
// the run's metrics on /metrics until Close.
func (r *Run) Serve(addr string, labels Labels) (*Server, error) {
	h, err := r.Handler(labels)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", h)
	s := &Server{
		srv:  &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second},
		ln:   ln,
		done: make(chan error, 1),
	}
	go func() { s.done <- s.srv.Serve(ln) }()
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Close stops the server, letting scrapes under way finish for up to a
// second. Calling it again returns the first call's result.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		err := s.srv.Shutdown(ctx)
		if serr := <-s.done; !errors.Is(serr, http.ErrServerClosed) {
			err = errors.Join(err, serr)
		}
		if err != nil {
			s.closeErr = fmt.Errorf("stop serving: %w", err)
		}
	})
	return s.closeErr
}

// CheckPushURL tells whether url can name a Pushgateway: host:port, or
// an http or https URL without the /metrics/job/... part.
func CheckPushURL(raw string) error {
	full := raw
	if !strings.Contains(full, "://") {
		full = "http://" + full
	}
	u, err := url.Parse(full)
	switch {
	case err != nil:
		return err
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("%s: want an http or https URL", raw)
	case u.Host == "":
		return fmt.Errorf("%s: no host", raw)
	case strings.Contains(u.Path, "/metrics/"):
		return fmt.Errorf("%s: give the Pushgateway's base URL, without /metrics/job/...", raw)
	case u.RawQuery != "" || u.Fragment != "":
		return fmt.Errorf("%s: want no query or fragment", raw)
	}
	return nil
}

// PushTimeout bounds one push to the Pushgateway.
const PushTimeout = 10 * time.Second

// Push sends the finished run's metrics to the Pushgateway at gateway, under
// the grouping key job="writewatch" plus labels. It uses POST (push-add):
// the metrics pushed replace those of the same name in the group and the
// others stay, so that a run that is not clean keeps the group's
// writewatch_last_clean_run_timestamp_seconds.
func (r *Run) Push(ctx context.Context, gateway string, labels Labels) error {
	var body bytes.Buffer
	if err := writeText(&body, r.families(nil, 0)); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, PushTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, pushURL(gateway, labels), &body)
	if err != nil {
		return fmt.Errorf("push to %s: %w", gateway, err)
	}
	req.Header.Set("Content-Type", textContentType)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("push to %s: %w", gateway, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusAccepted {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return fmt.Errorf("push to %s: the Pushgateway answered %s: %s", gateway, resp.Status, strings.TrimSpace(string(msg)))
	}
	return nil
}

// pushURL is the Pushgateway's URL for the group job="writewatch" plus
// labels: /metrics/job/writewatch/NAME/VALUE..., a value with a slash
// (or empty) as NAME@base64/VALUE in URL-safe base64, as the Pushgateway
// reads them. Other values are path-escaped: a space is %20, which the
// Pushgateway reads as a space (the client library's push query-escapes
// it as "+", which the Pushgateway keeps as a "+").
func pushURL(gateway string, labels Labels) string {
	if !strings.Contains(gateway, "://") {
		gateway = "http://" + gateway
	}
	parts := []string{"metrics"}
	add := func(name, value string) {
		switch {
		case value == "":
			parts = append(parts, name+"@base64", "=")
		case strings.Contains(value, "/"):
			parts = append(parts, name+"@base64", base64.RawURLEncoding.EncodeToString([]byte(value)))
		default:
			parts = append(parts, name, url.PathEscape(value))
		}
	}
	add(reservedLabelJob, Job)
	names := make([]string, 0, len(labels))
	for k := range labels {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		add(k, labels[k])
	}
	return strings.TrimRight(gateway, "/") + "/" + strings.Join(parts, "/")
}

// WriteText writes the run's metrics to w in the text exposition format,
// with labels as constant labels and carried as the last clean run's time
// from before this run, in Unix seconds (0: none).
func (r *Run) WriteText(w io.Writer, labels Labels, carried float64) error {
	if err := writeText(w, r.families(labels, carried)); err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	return nil
}

// TextfileMode is the textfile's mode: node_exporter reads it as another
// user.
const TextfileMode = 0o644

// WriteTextfile writes the finished run's metrics to f in the text format
// that node_exporter's textfile collector reads, with labels as constant
// labels. f replaces the file whole (package outfile), so a reader sees
// either the old file or the new one; open it with TextfileMode. The last
// clean run's time is carried over from the file it replaces.
func (r *Run) WriteTextfile(f *outfile.File, labels Labels) error {
	var carried float64
	f.Read(func(rd io.Reader) error {
		carried = readLastClean(rd, labels)
		return nil
	})
	if err := f.Replace(func(w io.Writer) error { return r.WriteText(w, labels, carried) }); err != nil {
		return fmt.Errorf("metrics textfile: %w", err)
	}
	return nil
}

// readLastClean finds writewatch_last_clean_run_timestamp_seconds with
// exactly labels in a textfile. An empty or unreadable file carries
// nothing over.
func readLastClean(r io.Reader, labels Labels) float64 {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		name, got, v, ok := readSample(sc.Text())
		if ok && name == NameLastCleanRun && sameLabels(got, labels) {
			return max(v, 0)
		}
	}
	return 0
}

func sameLabels(got map[string]string, labels Labels) bool {
	if len(got) != len(labels) {
		return false
	}
	for k, v := range got {
		if w, ok := labels[k]; !ok || w != v {
			return false
		}
	}
	return true
}
