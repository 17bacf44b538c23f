package allowlist

import (
	"errors"
	"math/rand/v2"
	"path"
	"strings"
	"testing"
)

// The reference matcher below follows the documented rules as directly as
// possible: it splits pattern and path into segments and tries every way
// to match them recursively. It is slow (memoized to stay polynomial) and
// is used only to check the compiled matcher.

// refSegments splits an absolute, clean path or pattern into segments.
func refSegments(s string) []string {
	if s == "/" {
		return nil
	}
	return strings.Split(s[1:], "/")
}

// refMatch reports whether the clean absolute pattern matches the path or
// one of its ancestors.
func refMatch(pattern, p string) bool {
	if !strings.HasPrefix(p, "/") {
		return false
	}
	ps, ss := refSegments(pattern), refSegments(p)
	for k := 0; k <= len(ss); k++ {
		if refMatchSegs(ps, ss[:k]) {
			return true
		}
	}
	return false
}

// refMatchSegs reports whether pattern segments ps match exactly the path
// segments ss.
func refMatchSegs(ps, ss []string) bool {
	memo := map[[2]int]bool{}
	var rec func(i, j int) bool
	rec = func(i, j int) bool {
		key := [2]int{i, j}
		if v, ok := memo[key]; ok {
			return v
		}
		var r bool
		switch {
		case i == len(ps):
			r = j == len(ss)
		case ps[i] == "**":
			// Zero segments, or one more segment and try again.
			r = rec(i+1, j) || (j < len(ss) && rec(i, j+1))
		default:
			r = j < len(ss) && refMatchSeg(ps[i], ss[j]) && rec(i+1, j+1)
		}
		memo[key] = r
		return r
	}
	return rec(0, 0)
}

// refMatchSeg matches one pattern segment against one path segment.
func refMatchSeg(p, s string) bool {
	memo := map[[2]int]bool{}
	var rec func(i, j int) bool
	rec = func(i, j int) bool {
		key := [2]int{i, j}
		if v, ok := memo[key]; ok {
			return v
		}
		var r bool
		switch {
		case i == len(p):
			r = j == len(s)
		case p[i] == '*':
			r = rec(i+1, j) || (j < len(s) && rec(i, j+1))
		case j == len(s):
			r = false
		case p[i] == '?':
			r = s[j] != '/' && rec(i+1, j+1)
		case p[i] == '\\':
			r = p[i+1] == s[j] && rec(i+2, j+1)
		case p[i] == '[':
			in, n, _ := refClass(p[i:])
			r = in(s[j]) && rec(i+n, j+1)
		default:
			r = p[i] == s[j] && rec(i+1, j+1)
		}
		memo[key] = r
		return r
	}
	return rec(0, 0)
}

// refClass parses the class at the start of p, which begins with '['.
func refClass(p string) (in func(byte) bool, n int, ok bool) {
	type span struct{ lo, hi byte }
	var spans []span
	i := 1
	negate := i < len(p) && (p[i] == '!' || p[i] == '^')
	if negate {
		i++
	}
	start := i
	next := func() (byte, bool) {
		if i < len(p) && p[i] == '\\' {
			i++
		}
		if i >= len(p) {
			return 0, false
		}
		c := p[i]
		i++
		return c, true
	}
	for {
		if i >= len(p) {
			return nil, 0, false
		}
		if p[i] == ']' && i > start {
			i++
			break
		}
		lo, ok := next()
		if !ok {
			return nil, 0, false
		}
		hi := lo
		if i+1 < len(p) && p[i] == '-' && p[i+1] != ']' {
			i++
			if hi, ok = next(); !ok {
				return nil, 0, false
			}
			if lo > hi {
				return nil, 0, false
			}
		}
		spans = append(spans, span{lo, hi})
	}
	return func(c byte) bool {
		for _, s := range spans {
			if s.lo <= c && c <= s.hi {
				return !negate
			}
		}
		return negate
	}, i, true
}

// refValid reports whether the clean absolute pattern is well formed.
func refValid(pattern string) bool {
	for _, seg := range refSegments(pattern) {
		if seg == "**" {
			continue
		}
		if strings.Contains(seg, "**") {
			// Unless every "**" is part of an escape or a class, it is an error.
			if hasBareDoubleStar(seg) {
				return false
			}
		}
		for i := 0; i < len(seg); {
			switch seg[i] {
			case '\\':
				if i+1 >= len(seg) {
					return false
				}
				i += 2
			case '[':
				_, n, ok := refClass(seg[i:])
				if !ok {
					return false
				}
				i += n
			default:
				i++
			}
		}
	}
	return true
}

// hasBareDoubleStar reports whether seg has two unescaped '*' in a row
// outside of classes.
func hasBareDoubleStar(seg string) bool {
	prevStar := false
	for i := 0; i < len(seg); {
		switch seg[i] {
		case '*':
			if prevStar {
				return true
			}
			prevStar = true
			i++
			continue
		case '\\':
			i += 2
		case '[':
			if _, n, ok := refClass(seg[i:]); ok {
				i += n
			} else {
				i++
			}
		default:
			i++
		}
		prevStar = false
	}
	return false
}

func FuzzPatternMatch(f *testing.F) {
	f.Add("/a/**/b", "/a/x/y/b/c")
	f.Add("/tmp/*.d", "/tmp/x.d/f")
	f.Add("/a/[!a-c]?", "/a/dd")
	f.Add("/**/__pycache__", "/p/__pycache__/m.pyc")
	f.Add("/a\\*/[]x]", "/a*/]")
	f.Add("/x/a**b", "/x/ab")
	f.Fuzz(func(t *testing.T, pattern, p string) {
		if len(pattern) > 200 || len(p) > 200 {
			return
		}
		if !strings.HasPrefix(pattern, "/") {
			pattern = "/" + pattern
		}
		cp, err := Compile(pattern)
		clean := path.Clean(pattern)
		valid := refValid(clean)
		if (err == nil) != valid {
			t.Fatalf("Compile(%q) error = %v, but reference says valid = %v", pattern, err, valid)
		}
		if err != nil {
			if !errors.Is(err, ErrBadPattern) {
				t.Fatalf("Compile(%q) error %v does not wrap ErrBadPattern", pattern, err)
			}
			return
		}
		if cp.Match(p) && !strings.HasPrefix(p, "/") {
			t.Fatalf("Compile(%q).Match(%q) = true for a relative path", pattern, p)
		}
		if !strings.HasPrefix(p, "/") {
			p = "/" + p
		}
		p = path.Clean(p)
		got, want := cp.Match(p), refMatch(clean, p)
		if got != want {
			t.Fatalf("Compile(%q).Match(%q) = %v, reference says %v", pattern, p, got, want)
		}
		// A path matched by a pattern is matched by the pattern made from it.
		if got {
			lit, err := Compile(escapeGlob(p))
			if err != nil {
				t.Fatalf("Compile(escapeGlob(%q)): %v", p, err)
			}
			if !lit.Match(p) {
				t.Fatalf("escaped path %q does not match itself", p)
			}
		}
	})
}

func FuzzLoadConfig(f *testing.F) {
	f.Add([]byte("allow:\n  - tests/**\n  - ~/.cache/x\ndeny:\n  - .git\n"))
	f.Add([]byte("defaults: false\n"))
	f.Add([]byte("defaults:\n  tmp: false\n  go-cache: true\n"))
	f.Add([]byte("allow: [$HOME/a, '${T}/b']\n"))
	f.Add([]byte("allow: &a [*a]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		const file = "/proj/.writewatch.yaml"
		l, err := load(Options{
			WorkDir: "/proj/sub",
			Home:    "/home/u",
			Getenv:  mapEnv(map[string]string{"HOME": "/home/u", "T": "/t"}),
			GoEnv: func() (map[string]string, error) {
				return map[string]string{"GOCACHE": "/c", "GOMODCACHE": "/m"}, nil
			},
		}, fakeFS(map[string]string{file: string(data)}, nil))
		if err != nil {
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v (%T) is not a *ConfigError", err, err)
			}
			if ce.File != file || ce.Line < 1 {
				t.Fatalf("ConfigError file %q line %d, want %q and a line >= 1", ce.File, ce.Line, file)
			}
			if msg := err.Error(); strings.ContainsAny(msg, "\n\r") {
				t.Fatalf("error message has more than one line: %q", msg)
			}
			return
		}
		for _, e := range l.Entries() {
			if !strings.HasPrefix(e.Pattern, "/") {
				t.Fatalf("entry %+v is not absolute", e)
			}
			l.Match(path.Join(strings.ReplaceAll(e.Pattern, "*", "x"), "f"))
		}
		l.Match("/proj/sub/x")
	})
}

// TestPatternMatchRandom compares the compiled matcher with the reference
// on many small patterns and paths built from a few interesting pieces.
func TestPatternMatchRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	segPieces := []string{"a", "b", "*", "?", "[ab]", "[!a]", "\\*", "a*", "*b", "*a*"}
	nameBytes := []string{"a", "b", "*", "ab", "ba", "aab", ""}
	pick := func(s []string) string { return s[rng.IntN(len(s))] }
	matches, errs := 0, 0
	for range 50000 {
		var pat strings.Builder
		for range 1 + rng.IntN(5) {
			pat.WriteByte('/')
			if rng.IntN(4) == 0 {
				pat.WriteString("**")
				continue
			}
			for range 1 + rng.IntN(2) {
				pat.WriteString(pick(segPieces))
			}
		}
		var p strings.Builder
		for range rng.IntN(6) {
			p.WriteByte('/')
			for range 1 + rng.IntN(2) {
				p.WriteString(pick(nameBytes))
			}
		}
		ps := path.Clean("/" + p.String())
		cp, err := Compile(pat.String())
		if err != nil {
			if refValid(path.Clean(pat.String())) {
				t.Fatalf("Compile(%q): %v, but the reference says it is valid", pat.String(), err)
			}
			errs++
			continue
		}
		if got, want := cp.Match(ps), refMatch(cp.String(), ps); got != want {
			t.Fatalf("Compile(%q).Match(%q) = %v, reference says %v", pat.String(), ps, got, want)
		} else if got {
			matches++
		}
	}
	t.Logf("%d matches, %d bad patterns", matches, errs)
	if matches < 5000 || errs < 100 {
		t.Errorf("too few matches (%d) or bad patterns (%d) to tell much", matches, errs)
	}
}
