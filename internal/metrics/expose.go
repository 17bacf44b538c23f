package metrics

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/push"
	"github.com/writewatch/writewatch/internal/outfile"
)

// Handler serves the run's metrics, each with labels as constant labels,
// through the client library's handler (promhttp): in the text format, or
// in the protocol buffer format when the scraper asks for it, gzipped
// when it accepts it.
func (r *Run) Handler(labels Labels) (http.Handler, error) {
	reg, err := r.registry(labels, 0)
	if err != nil {
		return nil, err
	}
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), nil
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
// the grouping key job="writewatch" plus labels, with the client library's
// push (in its default format, protocol buffers). It uses POST (push-add):
// the metrics pushed replace those of the same name in the group and the
// others stay, so that a run that is not clean keeps the group's
// writewatch_last_clean_run_timestamp_seconds.
func (r *Run) Push(ctx context.Context, gateway string, labels Labels) error {
	reg, err := r.registry(nil, 0)
	if err != nil {
		return err
	}
	p := push.New(gateway, Job).Gatherer(reg)
	for k, v := range labels {
		p.Grouping(groupingLabel(k, v))
	}
	ctx, cancel := context.WithTimeout(ctx, PushTimeout)
	defer cancel()
	if err := p.AddContext(ctx); err != nil {
		return fmt.Errorf("push to %s: %w", gateway, err)
	}
	return nil
}

// groupingLabel is the label name and value to give push.Pusher.Grouping
// for the grouping label name=value. The library writes a value in the
// URL's path as url.QueryEscape does, which turns a space into a "+", and
// the Pushgateway keeps a "+" in a path as it is; it encodes in base64
// only a value with a "/" or an empty one. A value that query escaping
// would change is thus given in base64 already, under NAME@base64: the
// Pushgateway decodes it, and base64's URL alphabet is left as it is by
// the library, which takes NAME@base64 for a label name.
func groupingLabel(name, value string) (string, string) {
	if value == "" || url.QueryEscape(value) == value {
		return name, value
	}
	return name + "@base64", base64.RawURLEncoding.EncodeToString([]byte(value))
}

// WriteText writes the run's metrics to w in the text exposition format,
// with labels as constant labels and carried as the last clean run's time
// from before this run, in Unix seconds (0: none).
func (r *Run) WriteText(w io.Writer, labels Labels, carried float64) error {
	reg, err := r.registry(labels, carried)
	if err != nil {
		return err
	}
	if err := writeText(w, reg); err != nil {
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
// clean run's time is carried over from the file it replaces. The text is
// prometheus.WriteToTextfile's, written through outfile rather than by
// it: outfile creates the file as the user who invoked sudo, in the
// directory it opened before COMMAND started, and syncs it before the
// rename (package outfile).
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
