package runners

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/writewatch/writewatch/report"
)

// hasJSONFlag reports whether go test args ask for -json output (flags
// after -args belong to the test binary).
func hasJSONFlag(args []string) bool {
	for _, a := range args[2:] {
		switch a {
		case "-args", "--args":
			return false
		case "-json", "--json", "-json=true", "--json=true":
			return true
		}
	}
	return false
}

// GoJSON copies go test -json output from COMMAND to the real stdout
// byte for byte, and reads each test's result from it on the way, for
// the JUnit report.
type GoJSON struct {
	done    chan struct{}
	r, w    *os.File
	mu      sync.Mutex
	results []goResult
}

type goResult struct {
	pkg, test, outcome, output string
	seconds                    float64
}

// maxOutput bounds the output kept of one failed test.
const maxOutput = 4096

// NewGoJSON starts copying when args run go test -json and out is set:
// COMMAND is to write its stdout to Writer. It returns nil otherwise, or
// when no pipe can be made.
func NewGoJSON(args []string, out *os.File) *GoJSON {
	if out == nil || !IsGoTest(args) || !hasJSONFlag(args) {
		return nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil
	}
	t := &GoJSON{done: make(chan struct{}), r: r, w: w}
	go func() {
		defer close(t.done)
		t.copy(out)
	}()
	return t
}

// Writer is the file COMMAND writes its stdout to.
func (t *GoJSON) Writer() *os.File { return t.w }

// Started closes writewatch's copy of Writer once COMMAND has it; when
// COMMAND did not start, it stops the copy too.
func (t *GoJSON) Started(ok bool) {
	t.w.Close()
	if !ok {
		t.finish(0)
	}
}

// Results waits up to wait for the output to end (processes COMMAND left
// behind may hold it open), then returns each test's result read.
func (t *GoJSON) Results(wait time.Duration) []report.TestResult {
	var out []report.TestResult
	for _, res := range t.finish(wait) {
		out = append(out, report.TestResult{Runner: report.RunnerGo, Package: res.pkg, ID: res.test,
			Outcome: res.outcome, Seconds: res.seconds, Message: res.output})
	}
	return out
}

func (t *GoJSON) copy(out io.Writer) {
	br := bufio.NewReaderSize(t.r, 64<<10)
	outputs := map[[2]string]*strings.Builder{}
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			if _, werr := out.Write(line); werr != nil {
				// The reader of our stdout is gone: let COMMAND see
				// that too, as it would have without writewatch.
				t.r.Close()
				return
			}
			if err == nil {
				t.parse(line, outputs)
			}
		}
		if err == bufio.ErrBufferFull {
			continue // a line too long to be an event: copied, not parsed
		}
		if err != nil {
			return
		}
	}
}

func (t *GoJSON) parse(line []byte, outputs map[[2]string]*strings.Builder) {
	var ev struct {
		Action  string
		Package string
		Test    string
		Elapsed float64
		Output  string
	}
	if json.Unmarshal(line, &ev) != nil || ev.Test == "" {
		return
	}
	key := [2]string{ev.Package, ev.Test}
	switch ev.Action {
	case "output":
		b := outputs[key]
		if b == nil {
			b = &strings.Builder{}
			outputs[key] = b
		}
		if b.Len() < maxOutput {
			b.WriteString(ev.Output)
		}
	case "pass", "fail", "skip":
		res := goResult{pkg: ev.Package, test: ev.Test, seconds: ev.Elapsed}
		switch ev.Action {
		case "pass":
			res.outcome = report.OutcomePassed
		case "fail":
			res.outcome = report.OutcomeFailed
		case "skip":
			res.outcome = report.OutcomeSkipped
		}
		if b := outputs[key]; b != nil && ev.Action != "pass" {
			res.output = b.String()
		}
		delete(outputs, key)
		t.mu.Lock()
		t.results = append(t.results, res)
		t.mu.Unlock()
	}
}

// finish waits up to wait for the output to end, then returns the
// results read.
func (t *GoJSON) finish(wait time.Duration) []goResult {
	select {
	case <-t.done:
	case <-time.After(wait):
		t.r.Close()
		<-t.done
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.results
}
