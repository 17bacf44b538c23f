package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/writewatch/writewatch/internal/nameshape"
)

// ReadBaseline reads a report that an earlier run wrote with --json.
func ReadBaseline(path string) (*Report, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Report
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: not a writewatch JSON report: %w", path, err)
	}
	if r.Version != SchemaVersion {
		return nil, fmt.Errorf("%s: JSON report version %d, want %d", path, r.Version, SchemaVersion)
	}
	return &r, nil
}

// baselineKey is what a violation must share with a baseline entry to
// match it: the test (or, outside tests, who wrote), the operation and
// role, the directory, and the shape of the name (nameshape.Shape).
type baselineKey struct {
	who, op, role, dir, shape string
}

func baselineKeyOf(v *Violation) baselineKey {
	who := v.Runner + "\x00" + v.Package + "\x00" + v.Test
	if v.Test == "" {
		who += "\x00" + v.Phase
	}
	return baselineKey{who: who, op: v.Op, role: v.Role, dir: filepath.Dir(v.Path), shape: nameshape.Shape(filepath.Base(v.Path))}
}

// ApplyBaseline matches the violations of r against base, the report of
// an earlier run (file is its name, as the user gave it). there says
// whether a path is there at the end of r's run (nil: assume it is).
//
//   - A violation on a path that base lists as left-behind, and never as
//     data-loss, changed what an earlier run left there: when the
//     kernel's facts made it data-loss, it is marked BaselineLeftover and
//     given the severity of a write to a file the run made: left-behind,
//     or transient when the path is gone.
//   - A violation is Baselined, and fails nothing, when base has an
//     entry of the same test (outside tests, the same package and phase),
//     operation, role and directory, of the same severity or a worse one,
//     whose name is the violation's own or, for a violation that is not
//     data-loss (nor of unknown severity, nor of a path cut short), of
//     the same shape: data loss is covered only by an entry that names
//     its very path.
//   - The entries of base that this run did not make again (no
//     violation of their test, operation, role, directory and shape) are
//     listed in r.Fixed, but for a left-behind one whose path is still
//     there, listed in r.Leftovers: the test may have found the file
//     and skipped the write.
func ApplyBaseline(r *Report, base *Report, file string, there func(path string) bool) {
	if there == nil {
		there = func(string) bool { return true }
	}
	r.Baseline = file
	left := leftPaths(base)
	for i := range r.Violations {
		if v := &r.Violations[i]; v.Severity == SeverityDataLoss && !v.Truncated && left[v.Path] {
			v.BaselineLeftover = true
			v.Severity = SeverityTransient
			if there(v.Path) {
				v.Severity = SeverityLeftBehind
			}
		}
	}
	entries := map[baselineKey][]int{}
	for i := range base.Violations {
		k := baselineKeyOf(&base.Violations[i])
		entries[k] = append(entries[k], i)
	}
	made := make([]bool, len(base.Violations)) // made again, covered or not
	for i := range r.Violations {
		v := &r.Violations[i]
		for _, j := range entries[baselineKeyOf(v)] {
			made[j] = true
			if covers(&base.Violations[j], v) {
				v.Baselined = true
			}
		}
	}
	r.Fixed, r.Leftovers = nil, nil
	for j, b := range base.Violations {
		switch {
		case made[j]:
		case b.Severity == SeverityLeftBehind && !b.Truncated && there(b.Path):
			r.Leftovers = append(r.Leftovers, b)
		default:
			r.Fixed = append(r.Fixed, b)
		}
	}
}

// covers reports whether baseline entry b, of v's key, covers v: it is
// as severe as v or more, and names v's path, or one of its shape when v
// is not data-loss.
func covers(b, v *Violation) bool {
	if SeverityRank(b.Severity) > SeverityRank(v.Severity) {
		return false
	}
	exact := v.Severity == SeverityDataLoss || v.Severity == "" || v.Truncated || b.Truncated
	return b.Path == v.Path && b.Truncated == v.Truncated || !exact
}

// leftPaths are the paths base lists as left-behind and never as
// data-loss or of unknown severity: at the end of its run, they held
// what the run made.
func leftPaths(base *Report) map[string]bool {
	left := map[string]bool{}
	for i := range base.Violations {
		if b := &base.Violations[i]; b.Severity == SeverityLeftBehind && !b.Truncated {
			left[b.Path] = true
		}
	}
	for i := range base.Violations {
		if b := &base.Violations[i]; b.Severity == SeverityDataLoss || b.Severity == "" {
			delete(left, b.Path)
		}
	}
	return left
}
