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
	"github.com/writewatch/writewatch/tracer"
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

// recordedConfig is a Config with its allowlist as entries, its names
// kept byte for byte (tracer.Bytes: a path or an argument need not be
// UTF-8).
type recordedConfig struct {
	Config
	Command    []tracer.Bytes  `json:"command"`
	WorkDir    tracer.Bytes    `json:"work_dir"`
	Home       tracer.Bytes    `json:"home"`
	Roots      []tracer.Bytes  `json:"roots,omitempty"`
	ConfigFile tracer.Bytes    `json:"config_file,omitempty"`
	Project    tracer.Bytes    `json:"project"`
	Entries    []recordedEntry `json:"entries"`
	// BaselineFile is Config.BaselineFile.
	BaselineFile tracer.Bytes `json:"baseline_file,omitempty"`
}

// recordedEntry is an allowlist entry, as a recording keeps it.
type recordedEntry struct {
	Kind          allowlist.Kind `json:"kind"`
	Pattern       tracer.Bytes   `json:"pattern"`
	Raw           tracer.Bytes   `json:"raw"`
	Source        tracer.Bytes   `json:"source"`
	Broad         bool           `json:"broad,omitempty"`
	CoversProject bool           `json:"covers_project,omitempty"`
}

func bytesOf(ss []string) []tracer.Bytes {
	out := make([]tracer.Bytes, len(ss))
	for i, s := range ss {
		out[i] = tracer.Bytes(s)
	}
	return out
}

func stringsOf(bs []tracer.Bytes) []string {
	var out []string
	for _, b := range bs {
		out = append(out, string(b))
	}
	return out
}

// recorded is cfg as a recording keeps it.
func recorded(cfg *Config) *recordedConfig {
	rc := &recordedConfig{Config: *cfg, Command: bytesOf(cfg.Command), WorkDir: tracer.Bytes(cfg.WorkDir),
		Home: tracer.Bytes(cfg.Home), Roots: bytesOf(cfg.Roots), BaselineFile: tracer.Bytes(cfg.BaselineFile)}
	if a := cfg.Allow; a != nil {
		rc.ConfigFile, rc.Project = tracer.Bytes(a.ConfigFile()), tracer.Bytes(a.Project())
		for _, e := range a.Entries() {
			rc.Entries = append(rc.Entries, recordedEntry{e.Kind, tracer.Bytes(e.Pattern), tracer.Bytes(e.Raw), tracer.Bytes(e.Source), e.Broad, e.CoversProject})
		}
	}
	return rc
}

// config is the Config a recording kept.
func (rc *recordedConfig) config() (Config, error) {
	cfg := rc.Config
	cfg.Command, cfg.WorkDir, cfg.Home, cfg.Roots = stringsOf(rc.Command), string(rc.WorkDir), string(rc.Home), stringsOf(rc.Roots)
	cfg.BaselineFile = string(rc.BaselineFile)
	var entries []allowlist.Entry
	for _, e := range rc.Entries {
		entries = append(entries, allowlist.Entry{Kind: e.Kind, Pattern: string(e.Pattern), Raw: string(e.Raw), Source: string(e.Source), Broad: e.Broad, CoversProject: e.CoversProject})
	}
	list, err := allowlist.FromEntries(string(rc.ConfigFile), string(rc.Project), entries)
	if err != nil {
		return cfg, fmt.Errorf("session: recording's allowlist: %w", err)
	}
	cfg.Allow = list
	return cfg, nil
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
	r.write(line{Config: recorded(r.cfg)})
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
			if rec.Config, err = l.Config.config(); err != nil {
				return nil, err
			}
			haveConfig = true
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
