package session_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/writewatch/writewatch/internal/golden"
	"github.com/writewatch/writewatch/internal/render"
	"github.com/writewatch/writewatch/internal/session"
	"github.com/writewatch/writewatch/report"
)

// replay reads a recording and replays it, with the exit code the run's
// verdict gives.
func replay(t *testing.T, path string) *report.Report {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rec, err := session.ReadRecording(f)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := rec.Replay()
	if err != nil {
		t.Fatal(err)
	}
	rep.ExitCode = rep.Verdict(rep.Mode == report.ModeAudit, false)
	return rep
}

// Each recorded run (testdata/runs, recordings of real runs that
// integration's TestRecordedRuns rewrites with -update) replays with no
// kernel to the report in every format that testdata holds for it.
func TestRecordedRunsGolden(t *testing.T) {
	runs, err := filepath.Glob("testdata/runs/*.jsonl")
	if err != nil || len(runs) == 0 {
		t.Fatalf("no recorded runs in testdata/runs: %v", err)
	}
	for _, path := range runs {
		name := strings.TrimSuffix(filepath.Base(path), ".jsonl")
		t.Run(name, func(t *testing.T) {
			rep := replay(t, path)
			var buf bytes.Buffer
			if err := report.WriteJSON(&buf, rep); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, name+".json", buf.Bytes())
			buf.Reset()
			if err := render.WriteText(&buf, rep, render.TextOptions{}); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, name+".txt", buf.Bytes())
			buf.Reset()
			if err := render.WriteJUnit(&buf, rep); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, name+".junit.xml", buf.Bytes())
			buf.Reset()
			if err := render.WriteGitHubAnnotations(&buf, rep, rep.WorkDir); err != nil {
				t.Fatal(err)
			}
			if err := render.WriteGitHubSummary(&buf, rep); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, name+".github.txt", buf.Bytes())
		})
	}
}
