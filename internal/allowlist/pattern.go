package allowlist

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// A Pattern is a compiled allowlist pattern. See the package documentation
// for the syntax and the matching rules.
type Pattern struct {
	src string // cleaned pattern text

	// prefix is the unescaped literal path formed by the leading segments
	// that contain no wildcard, without a trailing slash ("" for the root).
	prefix string
	// rest holds the segments after prefix, as written (escaped).
	rest []string
	// segs are the compiled forms of rest, followed by an implicit "**"
	// that makes the pattern match every descendant of what it matches.
	segs []segment
}

type segKind uint8

const (
	segLiteral    segKind = iota // exact bytes
	segAny                       // "*": any single segment
	segDoubleStar                // "**": zero or more segments
	segGlob                      // anything else
)

type segment struct {
	kind segKind
	lit  string  // segLiteral: the unescaped segment
	toks []token // segGlob
}

// A token of a segGlob segment. A star token matches any run of bytes;
// any other token matches exactly one byte that is in set.
type token struct {
	star bool
	set  byteSet
}

type byteSet [4]uint64

func (s *byteSet) add(b byte)      { s[b>>6] |= 1 << (b & 63) }
func (s *byteSet) has(b byte) bool { return s[b>>6]&(1<<(b&63)) != 0 }
func (s *byteSet) addRange(lo, hi byte) {
	for c := int(lo); c <= int(hi); c++ {
		s.add(byte(c))
	}
}

func (s *byteSet) invert() {
	for i := range s {
		s[i] = ^s[i]
	}
}

// ErrBadPattern is wrapped by every error that Compile returns.
var ErrBadPattern = errors.New("bad pattern")

// Compile compiles an absolute pattern. The pattern is cleaned first (as
// path.Clean does: repeated and trailing slashes, "." and ".." segments).
// Errors wrap ErrBadPattern.
func Compile(pattern string) (*Pattern, error) {
	p, err := compile(pattern)
	if err != nil {
		return nil, fmt.Errorf("%w %q: %w", ErrBadPattern, pattern, err)
	}
	return p, nil
}

// compile is Compile with errors that do not repeat the pattern.
func compile(pattern string) (*Pattern, error) {
	if pattern == "" {
		return nil, errors.New("empty pattern")
	}
	if pattern[0] != '/' {
		return nil, errors.New("not an absolute path")
	}
	clean := path.Clean(pattern)
	p := &Pattern{src: clean}
	var parts []string
	if clean != "/" {
		parts = strings.Split(clean[1:], "/")
	}
	var prefix strings.Builder
	literal := true
	for i, part := range parts {
		seg, err := compileSegment(part)
		if err != nil {
			return nil, err
		}
		if literal && seg.kind == segLiteral {
			prefix.WriteByte('/')
			prefix.WriteString(seg.lit)
			continue
		}
		if literal {
			literal = false
			p.rest = parts[i:]
		}
		p.segs = append(p.segs, seg)
	}
	p.prefix = prefix.String()
	if n := len(p.segs); n == 0 || p.segs[n-1].kind != segDoubleStar {
		p.segs = append(p.segs, segment{kind: segDoubleStar})
	}
	return p, nil
}

// MustCompile is like Compile but panics on error. It is meant for
// patterns that are constants of the program.
func MustCompile(pattern string) *Pattern {
	p, err := Compile(pattern)
	if err != nil {
		panic(err)
	}
	return p
}

// String returns the cleaned pattern.
func (p *Pattern) String() string { return p.src }

// LiteralPrefix returns the unescaped path named by the leading segments of
// the pattern that contain no wildcard ("" when the first segment has one,
// or for the pattern "/"). Every path that the pattern matches is this path
// or lies below it.
func (p *Pattern) LiteralPrefix() string { return p.prefix }

func compileSegment(s string) (segment, error) {
	switch s {
	case "**":
		return segment{kind: segDoubleStar}, nil
	case "*":
		return segment{kind: segAny}, nil
	}
	if !strings.ContainsAny(s, `*?[\`) {
		return segment{kind: segLiteral, lit: s}, nil
	}
	var toks []token
	var lit []byte
	isLit := true
	for i := 0; i < len(s); {
		c := s[i]
		switch c {
		case '*':
			if len(toks) > 0 && toks[len(toks)-1].star {
				return segment{}, fmt.Errorf("%q: ** must be a whole path segment", s)
			}
			toks = append(toks, token{star: true})
			isLit = false
			i++
		case '?':
			var t token
			t.set.invert()
			toks = append(toks, t)
			isLit = false
			i++
		case '[':
			set, n, err := parseClass(s[i:])
			if err != nil {
				return segment{}, fmt.Errorf("%q: %v", s, err)
			}
			toks = append(toks, token{set: set})
			isLit = false
			i += n
		case '\\':
			if i+1 >= len(s) {
				return segment{}, fmt.Errorf("%q: \\ at the end of a path segment", s)
			}
			c = s[i+1]
			i += 2
			toks = append(toks, litToken(c))
			lit = append(lit, c)
		default:
			toks = append(toks, litToken(c))
			lit = append(lit, c)
			i++
		}
	}
	if isLit {
		return segment{kind: segLiteral, lit: string(lit)}, nil
	}
	return segment{kind: segGlob, toks: toks}, nil
}

func litToken(c byte) token {
	var t token
	t.set.add(c)
	return t
}

// parseClass parses the bracket expression at the start of s and returns
// its byte set and length. A ']' right after '[' (or after '[!' or '[^') is
// a member, as is a '-' that comes first or last; '\' escapes one byte.
func parseClass(s string) (byteSet, int, error) {
	var set byteSet
	i := 1
	negate := false
	if i < len(s) && (s[i] == '!' || s[i] == '^') {
		negate = true
		i++
	}
	first := true
	for {
		if i >= len(s) {
			return set, 0, errors.New("unterminated [ ]")
		}
		if s[i] == ']' && !first {
			i++
			break
		}
		first = false
		lo, n, err := classByte(s, i)
		if err != nil {
			return set, 0, err
		}
		i += n
		if i+1 < len(s) && s[i] == '-' && s[i+1] != ']' {
			hi, n, err := classByte(s, i+1)
			if err != nil {
				return set, 0, err
			}
			if lo > hi {
				return set, 0, fmt.Errorf("bad range %q in [ ]", s[i-1:i+1+n])
			}
			i += 1 + n
			set.addRange(lo, hi)
			continue
		}
		set.add(lo)
	}
	if negate {
		set.invert()
	}
	return set, i, nil
}

func classByte(s string, i int) (byte, int, error) {
	if s[i] != '\\' {
		return s[i], 1, nil
	}
	if i+1 >= len(s) {
		return 0, 0, errors.New("unterminated [ ]")
	}
	return s[i+1], 2, nil
}

// Match reports whether the pattern matches path or one of its ancestors.
// path must be absolute and clean; a path that does not start with '/'
// never matches. Match does not allocate.
func (p *Pattern) Match(path string) bool {
	if len(path) == 0 || path[0] != '/' {
		return false
	}
	n := len(p.prefix)
	if len(path) < n || path[:n] != p.prefix || (len(path) > n && path[n] != '/') {
		return false
	}
	// The path is the prefix, or continues it with "/...". Segments of the
	// rest start at si; si >= len(path) means there are none left.
	return matchSegments(p.segs, path, n+1)
}

// matchSegments matches segs against the segments of path that start at
// si. It is the classic wildcard algorithm on whole segments: only the most
// recent "**" needs to be retried, with one more segment swallowed.
func matchSegments(segs []segment, path string, si int) bool {
	pi := 0
	starPi, starSi := -1, 0
	for si < len(path) {
		end := si
		for end < len(path) && path[end] != '/' {
			end++
		}
		if pi < len(segs) {
			s := &segs[pi]
			if s.kind == segDoubleStar {
				if pi == len(segs)-1 {
					return true // a final "**" takes whatever is left
				}
				starPi, starSi = pi, si
				pi++
				continue
			}
			if s.match(path[si:end]) {
				pi++
				si = end + 1
				continue
			}
		}
		if starPi < 0 {
			return false
		}
		// Let the last "**" take one more segment and retry after it.
		for starSi < len(path) && path[starSi] != '/' {
			starSi++
		}
		starSi++
		pi, si = starPi+1, starSi
	}
	for pi < len(segs) && segs[pi].kind == segDoubleStar {
		pi++
	}
	return pi == len(segs)
}

func (s *segment) match(name string) bool {
	switch s.kind {
	case segLiteral:
		return name == s.lit
	case segAny:
		return true
	case segGlob:
		return matchTokens(s.toks, name)
	}
	return false
}

// matchTokens is the classic wildcard algorithm on bytes.
func matchTokens(toks []token, name string) bool {
	ti, ni := 0, 0
	starTi, starNi := -1, 0
	for ni < len(name) {
		if ti < len(toks) {
			t := &toks[ti]
			if t.star {
				starTi, starNi = ti, ni
				ti++
				continue
			}
			if t.set.has(name[ni]) {
				ti++
				ni++
				continue
			}
		}
		if starTi < 0 {
			return false
		}
		starNi++
		ti, ni = starTi+1, starNi
	}
	for ti < len(toks) && toks[ti].star {
		ti++
	}
	return ti == len(toks)
}

// escapeGlob returns s with every byte that is special in a pattern
// escaped, so that the result matches s literally.
func escapeGlob(s string) string {
	if !strings.ContainsAny(s, `*?[\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', '\\':
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Literal returns the config entry that names exactly path, whatever its
// characters: pattern characters and '$' are escaped, and a relative path
// starting with '~' gets "./" in front, so that nothing in it is expanded.
func Literal(path string) string {
	s := strings.ReplaceAll(escapeGlob(path), "$", `\$`)
	if strings.HasPrefix(s, "~") {
		s = "./" + s
	}
	return s
}

// CanMatchBelow reports whether the pattern may match some path strictly
// below dir, an absolute, clean directory: whether a write somewhere under
// dir could be one the pattern names. It errs on the side of true: a
// glob segment is assumed to match some name.
func (p *Pattern) CanMatchBelow(dir string) bool {
	if dir == "/" {
		dir = ""
	}
	n := len(p.prefix)
	switch {
	case len(dir) <= n:
		// dir is the prefix or above it, or beside it.
		return p.prefix[:len(dir)] == dir && (len(dir) == n || p.prefix[len(dir)] == '/')
	case dir[:n] != p.prefix || dir[n] != '/':
		return false
	}
	// dir continues the prefix: can its remaining segments be consumed by
	// the start of segs? Track every reachable position in segs.
	reach := map[int]bool{}
	var close func(int)
	close = func(pi int) {
		if pi >= len(p.segs) || reach[pi] {
			return
		}
		reach[pi] = true
		if p.segs[pi].kind == segDoubleStar {
			close(pi + 1)
		}
	}
	close(0)
	for _, name := range strings.Split(dir[n+1:], "/") {
		prev := reach
		reach = map[int]bool{}
		for pi := range prev {
			s := &p.segs[pi]
			if s.kind == segDoubleStar {
				close(pi)
			} else if s.match(name) {
				close(pi + 1)
			}
		}
		if len(reach) == 0 {
			return false
		}
	}
	return true
}
