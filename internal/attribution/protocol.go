package attribution

import (
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/writewatch/writewatch/report"
)

// MarkerPrefix starts every path of the test-boundary protocol (see
// docs/protocol.md). Opening such a path always fails, with ENOTDIR, because
// /dev/null is not a directory; writewatch sees the attempt in the kernel,
// in order with the process's writes and forks.
const MarkerPrefix = "/dev/null/.writewatch/"

// protocolVersion is the only version of the protocol so far.
const protocolVersion = "1"

// Marker handles a boundary announcement: path is what process tgid tried
// to open. It reports whether path was one (whether it was understood or
// not); such opens are never judged as writes.
func (ts *Tests) Marker(tgid uint32, path string) bool {
	rest, ok := strings.CutPrefix(path, MarkerPrefix)
	if !ok {
		return false
	}
	version, rest, _ := strings.Cut(rest, "/")
	verb, query, _ := strings.Cut(rest, "?")
	if version != protocolVersion {
		return true
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return true
	}
	runner := q.Get("runner")
	if runner == "" {
		runner = "test"
	}
	suite, id := q.Get("suite"), q.Get("id")
	line := ts.protocolLine(verb, id, q.Get("line"))
	ts.announced(tgid, runner)
	switch verb {
	case "begin":
		w := report.Who{Runner: runner, Package: suite, Test: id, Phase: q.Get("phase"), Fixture: q.Get("fixture")}
		if id != "" {
			t := ts.test(runner, suite, id)
			if f := q.Get("file"); f != "" {
				t.File, t.Line = f, line
			}
			if fx := q.Get("fixtures"); fx != "" {
				t.Fixtures = strings.Split(fx, ",")
			}
			w.TestFile, w.TestLine = t.File, t.Line
		}
		ts.ctx[tgid] = w
	case "plan":
		if total, ok := ts.protocolTotal(q.Get("total")); ok {
			ts.addPlan(tgid, runner, suite, q["id"], total)
		}
		return true
	case "end":
		ts.ctx[tgid] = report.Who{Runner: runner, Package: suite, Phase: q.Get("phase")}
	case "result":
		if id == "" {
			return true
		}
		secs := ts.protocolSeconds(id, q.Get("seconds"))
		ts.Result(runner, suite, id, ts.protocolOutcome(id, q.Get("outcome")), secs, q.Get("message"))
		if f := q.Get("file"); f != "" {
			t := ts.test(runner, suite, id)
			t.File, t.Line = f, line
		}
		return true
	default:
		return true
	}
	ts.setCurrent()
	return true
}

// UsesFixture reports whether test id of runner's suite pkg uses
// fixture, as its runner announced (the protocol's fixtures field).
func (ts *Tests) UsesFixture(runner, pkg, id, fixture string) bool {
	t := ts.byKey[runner+"\x00"+pkg+"\x00"+id]
	return t != nil && slices.Contains(t.Fixtures, fixture)
}

// maxBadValues is how many ignored protocol values the report quotes;
// the rest are counted.
const maxBadValues = 10

// badValue notes a protocol value that was ignored: it is reported, and
// never reaches the report's numbers (a NaN would make its JSON invalid).
func (ts *Tests) badValue(verb, id, field, value string) {
	ts.badValues++
	if len(ts.badQuoted) < maxBadValues {
		if len(value) > 64 {
			value = value[:64] + "..."
		}
		ts.badQuoted = append(ts.badQuoted, fmt.Sprintf("%s %s=%q (test %q)", verb, field, value, id))
	}
}

// protocolSeconds is a result's duration: a finite number of seconds, 0
// or more; anything else is ignored (0) and noted.
func (ts *Tests) protocolSeconds(id, v string) float64 {
	if v == "" {
		return 0
	}
	secs, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(secs) || math.IsInf(secs, 0) || secs < 0 {
		ts.badValue("result", id, "seconds", v)
		return 0
	}
	return secs
}

// protocolOutcome is a result's outcome: passed, failed or skipped;
// anything else is ignored ("") and noted.
func (ts *Tests) protocolOutcome(id, v string) string {
	switch v {
	case "", "passed", "failed", "skipped":
		return v
	}
	ts.badValue("result", id, "outcome", v)
	return ""
}

// protocolTotal is a plan's number of tests: a whole number, 0 or
// more; anything else is ignored and noted.
func (ts *Tests) protocolTotal(v string) (int, bool) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		ts.badValue("plan", "", "total", v)
		return 0, false
	}
	return n, true
}

// protocolLine is a test's line number: a whole number, 1 or more;
// anything else is ignored (0) and noted.
func (ts *Tests) protocolLine(verb, id, v string) int {
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		ts.badValue(verb, id, "line", v)
		return 0
	}
	return n
}
