package report_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/writewatch/writewatch/internal/render"
	"github.com/writewatch/writewatch/report"
)

// JSON's golden files are the render package's, with every format's
// (internal/render's TestFormatsGolden): here, what JSON alone must be.
func TestWriteJSONValid(t *testing.T) {
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := report.WriteJSON(&buf, c.Report()); err != nil {
				t.Fatal(err)
			}
			if !json.Valid(buf.Bytes()) {
				t.Fatalf("invalid JSON:\n%s", buf.Bytes())
			}
			if !bytes.HasSuffix(buf.Bytes(), []byte("}\n")) {
				t.Errorf("output does not end with a newline")
			}
		})
	}
}

// jsonString is what a JSON round trip makes of s: each byte of invalid
// UTF-8 becomes U+FFFD.
func jsonString(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		b.WriteRune(r) // utf8.RuneError for an invalid byte
		i += size
	}
	return b.String()
}

func TestJSONRoundTrip(t *testing.T) {
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			in := c.Report()
			var buf bytes.Buffer
			if err := report.WriteJSON(&buf, in); err != nil {
				t.Fatal(err)
			}
			var out report.Report
			if err := json.Unmarshal(buf.Bytes(), &out); err != nil {
				t.Fatal(err)
			}

			want := c.Report()
			// JSON always has arrays where the report may have nil.
			want.Violations = nonNil(want.Violations)
			want.Survivors = nonNil(want.Survivors)
			for i := range want.Violations {
				v := &want.Violations[i]
				v.Path = jsonString(v.Path)
				v.RequestedPath = jsonString(v.RequestedPath)
			}
			if !reflect.DeepEqual(&out, want) {
				t.Errorf("round trip differs:\n got %+v\nwant %+v", out, *want)
			}
		})
	}
}

func TestJSONEmptyArrays(t *testing.T) {
	r := &report.Report{Version: report.SchemaVersion, Mode: report.ModeGate, Violations: nil, Survivors: nil}
	r.Violations = nil
	var buf bytes.Buffer
	if err := report.WriteJSON(&buf, r); err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"command", "violations", "survivors"} {
		if got := string(m[k]); got != "[]" {
			t.Errorf("%q = %s, want []", k, got)
		}
	}
	if _, ok := m["lost"]; ok {
		t.Errorf(`"lost" present when nothing was lost`)
	}

	// Nested arrays too, and with json.Marshal as well as WriteJSON.
	r.Violations = []report.Violation{{Op: "mkdir", Path: "/x"}}
	r.Survivors = []report.Proc{{PID: 1}}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "null") {
		t.Errorf("null in %s", b)
	}
	for _, k := range []string{`"cmdline":[]`, `"chain":[]`} {
		if !strings.Contains(string(b), k) {
			t.Errorf("%s missing in %s", k, b)
		}
	}
}

func TestJSONFieldOrder(t *testing.T) {
	var buf bytes.Buffer
	if err := report.WriteJSON(&buf, richReport()); err != nil {
		t.Fatal(err)
	}
	s := buf.String()
	keys := []string{`"version"`, `"mode"`, `"command"`, `"workdir"`, `"config_file"`, `"exit_code"`,
		`"command_exit_code"`, `"started"`, `"finished"`, `"processes"`, `"events"`, `"lost_events"`,
		`"truncated_paths"`, `"violations"`, `"op"`, `"path"`, `"requested_path"`, `"pid"`, `"ppid"`,
		`"comm"`, `"cmdline"`, `"chain"`, `"count"`, `"first"`, `"action"`, `"survivors"`}
	last := -1
	for _, k := range keys {
		i := strings.Index(s[last+1:], k)
		if i < 0 {
			t.Fatalf("%s missing or out of order", k)
		}
		last += 1 + i
	}
}

func TestJSONNoHTMLEscape(t *testing.T) {
	r := emptyReport()
	r.Violations = []report.Violation{{Op: "open", Path: "/tmp/a<b>&c"}}
	var buf bytes.Buffer
	if err := report.WriteJSON(&buf, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"/tmp/a<b>&c"`) {
		t.Errorf("path escaped:\n%s", buf.String())
	}
}

type failingWriter struct{}

var errWrite = errors.New("disk full")

func (failingWriter) Write([]byte) (int, error) { return 0, errWrite }

func TestWriteErrors(t *testing.T) {
	if err := report.WriteJSON(failingWriter{}, emptyReport()); !errors.Is(err, errWrite) {
		t.Errorf("WriteJSON error = %v, want it to wrap %v", err, errWrite)
	}
	if err := render.WriteText(failingWriter{}, emptyReport(), render.TextOptions{}); !errors.Is(err, errWrite) {
		t.Errorf("WriteText error = %v, want it to wrap %v", err, errWrite)
	}
	if err := report.WriteJSON(&bytes.Buffer{}, nil); err == nil {
		t.Error("WriteJSON(nil report) succeeded")
	}
	if err := render.WriteText(&bytes.Buffer{}, nil, render.TextOptions{}); err == nil {
		t.Error("WriteText(nil report) succeeded")
	}
}
