package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

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
// role, and the directory.
type baselineKey struct {
	who, op, role, dir string
}

func baselineKeyOf(v *Violation) baselineKey {
	who := v.Runner + "\x00" + v.Package + "\x00" + v.Test
	if v.Test == "" {
		who += "\x00" + v.Phase
	}
	return baselineKey{who: who, op: v.Op, role: v.Role, dir: filepath.Dir(v.Path)}
}

// baselineSet is a baseline's entries of one key.
type baselineSet struct {
	entries []*Violation
	names   map[string][]int // a name's normalized form -> entries
	prefix  string           // the pattern of several names: prefix*suffix
	suffix  string
	glob    bool
}

// ApplyBaseline marks the violations of r that the baseline lists: the
// same test (or, outside tests, the same package and phase), the same
// operation and role, and the same path, or a path of the same pattern
// (random and numbered parts of names aside; or, where the baseline has
// several names in the directory, one that fits the pattern of them
// all). Those are Baselined and fail nothing. The baseline's entries that
// match no violation of r are listed in r.Fixed.
func ApplyBaseline(r *Report, base *Report, file string) {
	r.Baseline = file
	sets := map[baselineKey]*baselineSet{}
	for i := range base.Violations {
		b := &base.Violations[i]
		k := baselineKeyOf(b)
		s := sets[k]
		if s == nil {
			s = &baselineSet{names: map[string][]int{}}
			sets[k] = s
		}
		n := nameshape.VaryingName(filepath.Base(b.Path), []int{b.PID})
		s.names[n] = append(s.names[n], len(s.entries))
		s.entries = append(s.entries, b)
	}
	for _, s := range sets {
		var names []string
		for _, b := range s.entries {
			names = append(names, filepath.Base(b.Path))
		}
		if p, x, one := nameshape.NameParts(names); !one && len(names) > 1 && p+x != "" {
			s.prefix, s.suffix, s.glob = p, x, true
		}
	}
	seen := map[*Violation]bool{}
	for i := range r.Violations {
		v := &r.Violations[i]
		s := sets[baselineKeyOf(v)]
		if s == nil {
			continue
		}
		name := filepath.Base(v.Path)
		matched := s.names[nameshape.VaryingName(name, []int{v.PID})]
		if len(matched) == 0 && s.glob && len(name) >= len(s.prefix)+len(s.suffix) &&
			strings.HasPrefix(name, s.prefix) && strings.HasSuffix(name, s.suffix) {
			for j := range s.entries {
				matched = append(matched, j)
			}
		}
		if len(matched) == 0 {
			continue
		}
		v.Baselined = true
		for _, j := range matched {
			seen[s.entries[j]] = true
		}
	}
	r.Fixed = nil
	for i := range base.Violations {
		if b := &base.Violations[i]; !seen[b] {
			r.Fixed = append(r.Fixed, *b)
		}
	}
}
