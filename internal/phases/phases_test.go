package phases

import (
	"strings"
	"testing"
)

func TestWrite(t *testing.T) {
	was := on
	defer func() { on, done = was, nil }()

	on = false
	Start("off")()
	Mark("off mark")
	var b strings.Builder
	Write(&b)
	if b.Len() != 0 || len(done) != 0 {
		t.Fatalf("timings taken while off: %q", b.String())
	}

	on = true
	end := Start("load")
	Mark("started")
	end()
	Write(&b)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "phase started") || !strings.Contains(lines[1], "phase load") ||
		!strings.Contains(lines[2], "phases written") {
		t.Fatalf("want the mark, then the phase, in the order they ended, then the time written; got\n%s", b.String())
	}
}
