package session

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/writewatch/writewatch/internal/allowlist"
	"github.com/writewatch/writewatch/internal/host"
	"github.com/writewatch/writewatch/report"
)

// A recording of a run is JSON lines, one object each, with one key:
//
//	{"config": {...}}   the session's Config, with the allowlist's entries
//	{"item": {...}}     an Item, in the order the session handled them
//	{"fact": {...}}     an answer of the host (host.Fact)
//	{"end": {...}}      the End Finish was given, last
//
// Replay reads one back and gives the report the run gave, on any
// machine: the host's answers come from the facts.
type line struct {
	Config *recordedConfig `json:"config,omitempty"`
	Item   *Item           `json:"item,omitempty"`
	Fact   *host.Fact      `json:"fact,omitempty"`
	End    *End            `json:"end,omitempty"`
}

// recordedConfig is a Config with its allowlist as entries.
type recordedConfig struct {
	Config
	ConfigFile string            `json:"config_file,omitempty"`
	Project    string            `json:"project"`
	Entries    []allowlist.Entry `json:"entries"`
}

// recorder writes a recording. A write that fails stops the recording;
// Err says why.
type recorder struct {
	w      *bufio.Writer
	enc    *json.Encoder
	err    error
	cfg    *Config
	header bool // written
}

func newRecorder(w io.Writer, cfg *Config) *recorder {
	bw := bufio.NewWriter(w)
	return &recorder{w: bw, enc: json.NewEncoder(bw), cfg: cfg}
}

func (r *recorder) write(l line) {
	if r.err == nil {
		r.err = r.enc.Encode(l)
	}
}

// config writes the config, the first time: the session's Config is
// complete once the first item comes (Watching).
func (r *recorder) config() {
	if r.header {
		return
	}
	r.header = true
	rc := &recordedConfig{Config: *r.cfg}
	if a := r.cfg.Allow; a != nil {
		rc.ConfigFile, rc.Project, rc.Entries = a.ConfigFile(), a.Project(), a.Entries()
	}
	r.write(line{Config: rc})
}

func (r *recorder) item(it *Item) {
	r.config()
	r.write(line{Item: it})
}

func (r *recorder) fact(f host.Fact) {
	r.config()
	r.write(line{Fact: &f})
}

func (r *recorder) end(e *End) {
	r.config()
	r.write(line{End: e})
}

// flush writes what is buffered, once the session is done.
func (r *recorder) flush() {
	if r.err == nil {
		r.err = r.w.Flush()
	}
}

// RecordErr says why the recording (Config.Record) stopped, nil when it
// is whole.
func (s *Session) RecordErr() error {
	if s.rec == nil {
		return nil
	}
	return s.rec.err
}

// Recording is a run's recording, read back.
type Recording struct {
	Config Config
	Items  []Item
	Facts  []host.Fact
	End    End
}

// ReadRecording reads a recording.
func ReadRecording(r io.Reader) (*Recording, error) {
	dec := json.NewDecoder(r)
	rec := &Recording{}
	var haveConfig, haveEnd bool
	for {
		var l line
		err := dec.Decode(&l)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("session: read recording: %w", err)
		}
		switch {
		case l.Config != nil:
			list, err := allowlist.FromEntries(l.Config.ConfigFile, l.Config.Project, l.Config.Entries)
			if err != nil {
				return nil, fmt.Errorf("session: recording's allowlist: %w", err)
			}
			rec.Config, haveConfig = l.Config.Config, true
			rec.Config.Allow = list
		case l.Item != nil:
			rec.Items = append(rec.Items, *l.Item)
		case l.Fact != nil:
			rec.Facts = append(rec.Facts, *l.Fact)
		case l.End != nil:
			rec.End, haveEnd = *l.End, true
		}
	}
	if !haveConfig || !haveEnd {
		return nil, errors.New("session: read recording: no config or no end: the run did not end")
	}
	return rec, nil
}

// Replay runs the session of a recording again and returns its report.
func (rec *Recording) Replay() (*report.Report, error) {
	s, err := New(rec.Config, host.NewReplay(rec.Facts))
	if err != nil {
		return nil, err
	}
	for i := range rec.Items {
		s.Handle(&rec.Items[i])
	}
	return s.Finish(rec.End), nil
}
