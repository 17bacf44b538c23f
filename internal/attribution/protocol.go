package attribution

import (
	"net/url"
	"strconv"
	"strings"
)

// MarkerPrefix starts every path of the test-boundary protocol (see
// PROTOCOL.md). Opening such a path always fails, with ENOTDIR, because
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
	line, _ := strconv.Atoi(q.Get("line"))
	switch verb {
	case "begin":
		w := Who{Runner: runner, Package: suite, Test: id, Phase: q.Get("phase"), Fixture: q.Get("fixture")}
		if id != "" {
			t := ts.test(runner, suite, id)
			if f := q.Get("file"); f != "" {
				t.File, t.Line = f, line
			}
			w.File, w.Line = t.File, t.Line
		}
		ts.ctx[tgid] = w
	case "end":
		ts.ctx[tgid] = Who{Runner: runner, Package: suite, Phase: q.Get("phase")}
	case "result":
		if id == "" {
			return true
		}
		secs, _ := strconv.ParseFloat(q.Get("seconds"), 64)
		ts.Result(runner, suite, id, q.Get("outcome"), secs, q.Get("message"))
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
