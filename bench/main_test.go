package main

import (
	"strings"
	"testing"
	"time"
)

// A row checks each target against its own reference column: the
// --audit column against bare, the --sandbox column against --audit.
func TestRowTargets(t *testing.T) {
	w := workload{name: "start-up: true", targets: []target{
		vsBare("≤ bare + 60 ms", plusAtMost(60*time.Millisecond)),
		vsAudit("≤ --audit + 30 ms", plusAtMost(30*time.Millisecond)),
	}}
	res := func(sb time.Duration) []result {
		return []result{
			{config: "bare", median: time.Millisecond},
			{config: audit, median: 50 * time.Millisecond, ratio: 50},
			{config: sandbox, median: sb, ratio: float64(sb / time.Millisecond)},
		}
	}
	line, missed := row(w, res(70*time.Millisecond))
	if missed || !strings.Contains(line, "≤ bare + 60 ms met; --sandbox ≤ --audit + 30 ms met (+20 ms)") {
		t.Errorf("met: missed = %v, %s", missed, line)
	}
	line, missed = row(w, res(90*time.Millisecond))
	if !missed || !strings.Contains(line, "--sandbox ≤ --audit + 30 ms **missed: +40 ms**") {
		t.Errorf("missed: missed = %v, %s", missed, line)
	}
	// Without a --sandbox column (the sandbox cannot be made here), its
	// target is left out.
	line, missed = row(w, res(0)[:2])
	if missed || strings.Contains(line, "--sandbox") {
		t.Errorf("no sandbox column: missed = %v, %s", missed, line)
	}
}

func TestRowRatioAndMemory(t *testing.T) {
	w := workload{name: "real", targets: []target{vsBare("≤ 1.03", ratioAtMost(1.03)), vsAudit("≤ 1.05× --audit", ratioAtMost(1.05))}}
	line, missed := row(w, []result{
		{config: "bare", median: 100 * time.Millisecond},
		{config: audit, median: 110 * time.Millisecond, ratio: 1.1, rssMiB: 70},
		{config: sandbox, median: 112 * time.Millisecond, ratio: 1.12},
	})
	for _, want := range []string{"≤ 1.03 **missed: 1.10×**", "--sandbox ≤ 1.05× --audit met (1.02×)", "**missed: RSS 70 MiB > 64**"} {
		if !missed || !strings.Contains(line, want) {
			t.Errorf("want %q (missed = %v): %s", want, missed, line)
		}
	}
}
