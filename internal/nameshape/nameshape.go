// Package nameshape tells which parts of a file name vary from one run
// of a suite to the next (numbers, pids, temporary names), for the
// report's collapsed lines, its suggested allow entries and the
// --baseline match.
package nameshape

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
)

var (
	// A run of digits: four or more are a number, a time, a pid.
	digits = regexp.MustCompile(`[0-9]+`)
	// Python's tempfile names: tmp and eight random characters, a name
	// of their own (not tmpfile_backup).
	tempName = regexp.MustCompile(`tmp[a-z0-9_]{8}`)
	// A UUID, in either case.
	uuid = regexp.MustCompile(`[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`)
	// A run of letters and digits (mktemp's, Node's and Rust's random
	// characters), and one with underscores (Python's).
	alnum      = regexp.MustCompile(`[A-Za-z0-9]+`)
	alnumUnder = regexp.MustCompile(`[A-Za-z0-9_]+`)
	// A word and its number: 256color, python27, test_001.
	wordAndNumber = regexp.MustCompile(`^[0-9]+_?[a-z]{4,}$|^[a-z]+_?[0-9]+$`)
)

// Span is a part of a name, from byte Start to End (excluded).
type Span struct{ Start, End int }

// Varying lists the parts of name that differ from one run to the next,
// in order and apart: UUIDs; the random characters of temporary names
// (Python's tempfile, mktemp, mkdtemp and the like: see randomToken);
// runs of four digits or more (a number, a time); a number that is one
// of pids, the process IDs of the processes that wrote it: a test that
// names a file after itself ("scratch-355.tmp" by process 355) names it
// differently at each run, and a freshly started machine or container
// has pids of three digits or fewer.
func Varying(name string, pids []int) []Span {
	var spans []Span
	// Parts that overlap are one.
	add := func(s Span) {
		out := spans[:0]
		for _, o := range spans {
			if s.Start < o.End && o.Start < s.End {
				s = Span{min(s.Start, o.Start), max(s.End, o.End)}
				continue
			}
			out = append(out, o)
		}
		spans = append(out, s)
	}
	for _, m := range uuid.FindAllStringIndex(name, -1) {
		add(Span{m[0], m[1]})
	}
	for _, m := range tempName.FindAllStringIndex(name, -1) {
		if (m[0] == 0 || !isWordByte(name[m[0]-1])) && (m[1] == len(name) || !isWordByte(name[m[1]])) {
			add(Span{m[0] + 3, m[1]})
		}
	}
	for _, m := range alnum.FindAllStringIndex(name, -1) {
		if s, ok := randomToken(name[:m[0]], name[m[0]:m[1]]); ok {
			add(Span{m[0] + s, m[1]})
		}
	}
	for _, m := range alnumUnder.FindAllStringIndex(name, -1) {
		if pythonToken(name[:m[0]], name[m[0]:m[1]]) {
			add(Span{m[0], m[1]})
		}
	}
	for _, m := range digits.FindAllStringIndex(name, -1) {
		d := name[m[0]:m[1]]
		if len(d) >= 4 || slices.ContainsFunc(pids, func(p int) bool { return strconv.Itoa(p) == d }) {
			add(Span{m[0], m[1]})
		}
	}
	slices.SortFunc(spans, func(a, b Span) int { return a.Start - b.Start })
	return spans
}

// Glob is name with each part that varies (Varying) as '*', and the rest
// passed through lit (which escapes it for a pattern; nil keeps it).
func Glob(name string, pids []int, lit func(string) string) string {
	return Join(name, Varying(name, pids), lit)
}

// Join is name with each of spans (in order, apart) as '*', and the rest
// passed through lit (nil keeps it).
func Join(name string, spans []Span, lit func(string) string) string {
	if lit == nil {
		lit = func(s string) string { return s }
	}
	var b strings.Builder
	at := 0
	for _, s := range spans {
		b.WriteString(lit(name[at:s.Start]))
		b.WriteString("*")
		at = s.End
	}
	b.WriteString(lit(name[at:]))
	return b.String()
}

// Merge is the spans of a and b, those that overlap made one, in order.
func Merge(a, b []Span) []Span {
	out := slices.Clone(a)
	for _, s := range b {
		keep := out[:0]
		for _, o := range out {
			if s.Start < o.End && o.Start < s.End {
				s = Span{min(s.Start, o.Start), max(s.End, o.End)}
				continue
			}
			keep = append(keep, o)
		}
		out = append(keep, s)
	}
	slices.SortFunc(out, func(x, y Span) int { return x.Start - y.Start })
	return out
}

// Alike finds in names the parts that vary although Varying does not
// tell them apart: two names that are the same but for one part between
// '.' and '-' (or an end), of six characters or more and as long in
// both, with a digit or a capital after its first character in either,
// vary there: "info.json.pisfjhwy.tmp" (Python's random characters, with
// no digit) is "info.json.*.tmp" beside "info.json.k3j_x9ab.tmp". Parts
// Varying finds something in are left to it (outline_demo_158482901),
// but for those it finds all varying, which count as marked.
// The result maps a name to its parts found so.
func Alike(names []string, pids []int) map[string][]Span {
	type part struct {
		name  string
		span  Span
		whole bool
	}
	byKey := map[string][]part{}
	for _, n := range slices.Compact(slices.Sorted(slices.Values(names))) {
		known := Varying(n, pids)
		for _, p := range parts(n) {
			whole := slices.Contains(known, p) // already all varying: it joins in
			if p.End-p.Start < 6 || !whole && slices.ContainsFunc(known, func(k Span) bool { return k.Start < p.End && p.Start < k.End }) {
				continue
			}
			key := n[:p.Start] + "\x00" + strconv.Itoa(p.End-p.Start) + "\x00" + n[p.End:]
			byKey[key] = append(byKey[key], part{n, p, whole})
		}
	}
	out := map[string][]Span{}
	for _, ps := range byKey {
		if len(ps) < 2 || !slices.ContainsFunc(ps, func(p part) bool { return p.whole || marked(p.name[p.span.Start:p.span.End]) }) {
			continue
		}
		for _, p := range ps {
			out[p.name] = Merge(out[p.name], []Span{p.span})
		}
	}
	return out
}

// parts are the parts of name between '.' and '-'.
func parts(name string) []Span {
	var out []Span
	start := 0
	for i := 0; i <= len(name); i++ {
		if i == len(name) || name[i] == '.' || name[i] == '-' {
			if i > start {
				out = append(out, Span{start, i})
			}
			start = i + 1
		}
	}
	return out
}

// marked reports whether s has a digit, or a capital after its first
// character: words seldom do.
func marked(s string) bool {
	return strings.ContainsAny(s, "0123456789") || strings.IndexFunc(s[1:], func(r rune) bool { return r >= 'A' && r <= 'Z' }) >= 0
}

// VaryingName is name with the parts that differ from one run to the
// next as '*' (Varying).
func VaryingName(name string, pids []int) string {
	return Glob(name, pids, nil)
}

// NumberGlob is s with its numbers that differ from one run to the next
// as '*': runs of four digits or more, and a number that is one of pids.
func NumberGlob(s string, pids []int) string {
	return digits.ReplaceAllStringFunc(s, func(d string) string {
		if len(d) >= 4 || slices.ContainsFunc(pids, func(p int) bool { return strconv.Itoa(p) == d }) {
			return "*"
		}
		return d
	})
}

// randomToken reports whether a run of letters and digits is random
// characters, and from where, after is what comes before it in the
// name: after "tmp." (mktemp's) or "tmp" (Rust's ".tmpAbC12x"), six or
// more with a digit or a capital ("tmp.backup" is a word); anywhere,
// hexadecimal digits, eight or more, letters and digits both (a hash);
// and letters and digits that split into two or more one-letter words
// after the first ("Xa3bQ9zLkP": Xa 3 b Q 9 z Lk P), which words
// (TestHomeConfig), words and numbers (utf8mb4, v1beta1, iPhone12) and
// acronyms (IOError) do not; after a '-' or '.', mkdtemp's and
// mktemp's own templates' six or more (choppy).
func randomToken(before, tok string) (start int, ok bool) {
	if strings.HasSuffix(before, "tmp.") && tmpRandom(tok) {
		return 0, true
	}
	if rest, found := strings.CutPrefix(tok, "tmp"); found && rest != "" {
		if _, ok := randomToken("", rest); ok || tmpRandom(rest) || oneLetterWords(tok) >= 2 {
			return 3, true
		}
		return 0, false
	}
	if len(tok) < 6 {
		return 0, false
	}
	if len(tok) >= 8 && isHex(tok) && strings.ContainsAny(tok, "0123456789") && strings.IndexFunc(tok, isLetter) >= 0 {
		return 0, true
	}
	if (strings.HasSuffix(before, "-") || strings.HasSuffix(before, ".")) && len(tok) <= 16 && choppy(tok) {
		return 0, true
	}
	return 0, oneLetterWords(tok) >= 2
}

// choppy reports whether tok has small letters and capitals (and maybe
// digits), and changes from one to another at three in five characters
// or more,
// as random characters do ("Og28mp") and words seldom (Python3,
// iPhone12, HTTPServer2).
func choppy(tok string) bool {
	class := func(c byte) int {
		switch {
		case isDigit(c):
			return 0
		case isLower(c):
			return 1
		}
		return 2
	}
	var seen [3]bool
	changes := 0
	for i := 0; i < len(tok); i++ {
		seen[class(tok[i])] = true
		if i > 0 && class(tok[i]) != class(tok[i-1]) {
			changes++
		}
	}
	return seen[1] && seen[2] && changes*5 >= (len(tok)-1)*3
}

// tmpRandom reports whether s, after "tmp", is random characters.
func tmpRandom(s string) bool {
	return len(s) >= 6 && strings.IndexFunc(s, func(r rune) bool { return r >= '0' && r <= '9' || r >= 'A' && r <= 'Z' }) >= 0
}

// pythonToken reports whether a run of letters, digits and underscores,
// after before, is the eight random characters Python's tempfile puts
// after a prefix of one's own (NamedTemporaryFile(prefix="info.json.")):
// small letters, digits and underscores, after a '.' or a '-', with a
// letter and a digit (those without a digit, one in sixteen, look like
// words) and not a word and its number (256color, python27: one run of
// letters, four or more, after digits or before them).
func pythonToken(before, tok string) bool {
	if len(tok) != 8 || !(strings.HasSuffix(before, ".") || strings.HasSuffix(before, "-")) ||
		!strings.ContainsAny(tok, "0123456789") || strings.IndexFunc(tok, isLetter) < 0 {
		return false
	}
	return allOf(tok, func(c byte) bool { return isLower(c) || isDigit(c) || c == '_' }) && !wordAndNumber.MatchString(tok)
}

// oneLetterWords counts the words of one letter of tok after its first
// character: words are runs of digits, and letters split where a capital
// follows a small letter or starts a word after capitals (HTTPServer:
// HTTP Server).
func oneLetterWords(tok string) int {
	n := 0
	start := 0
	for i := 1; i <= len(tok); i++ {
		if i < len(tok) && !wordBreak(tok, i) {
			continue
		}
		if i-start == 1 && start > 0 && isLetter(rune(tok[start])) {
			n++
		}
		start = i
	}
	return n
}

// wordBreak reports whether a word of tok starts at i.
func wordBreak(tok string, i int) bool {
	a, b := tok[i-1], tok[i]
	switch {
	case isDigit(a) != isDigit(b):
		return true
	case isDigit(a):
		return false
	case isLower(a) && isUpper(b):
		return true
	case isUpper(a) && isUpper(b):
		return i+1 < len(tok) && isLower(tok[i+1])
	}
	return false
}

func isWordByte(c byte) bool { return isDigit(c) || isLower(c) || isUpper(c) || c == '_' }
func isDigit(c byte) bool    { return c >= '0' && c <= '9' }
func isLower(c byte) bool    { return c >= 'a' && c <= 'z' }
func isUpper(c byte) bool    { return c >= 'A' && c <= 'Z' }
func isLetter(r rune) bool   { return r < 0x80 && (isLower(byte(r)) || isUpper(byte(r))) }
func isHexByte(c byte) bool  { return isDigit(c) || c >= 'a' && c <= 'f' }
func isHEXByte(c byte) bool  { return isDigit(c) || c >= 'A' && c <= 'F' }
func allOf(s string, f func(byte) bool) bool {
	for i := 0; i < len(s); i++ {
		if !f(s[i]) {
			return false
		}
	}
	return true
}
func isHex(s string) bool { return allOf(s, isHexByte) || allOf(s, isHEXByte) }

// NameParts is what every name shares: the one name (one is true), or
// the common prefix and suffix around what varies. A run of digits at
// the edge of what varies is part of it: "run-10" and "run-12" share
// "run-", not "run-1".
func NameParts(names []string) (prefix, suffix string, one bool) {
	if len(names) == 0 {
		return "", "", false
	}
	prefix, suffix = names[0], names[0]
	one = true
	for _, n := range names[1:] {
		if n != names[0] {
			one = false
		}
		prefix = commonPrefix(prefix, n)
		suffix = commonSuffix(suffix, n)
	}
	if one {
		return names[0], "", true
	}
	// The prefix and suffix must not overlap in the shortest name.
	short := len(names[0])
	for _, n := range names {
		short = min(short, len(n))
	}
	if len(prefix)+len(suffix) > short {
		suffix = suffix[len(prefix)+len(suffix)-short:]
	}
	return strings.TrimRight(prefix, "0123456789"), strings.TrimLeft(suffix, "0123456789"), false
}

// SharedGlob is the one glob for names: what they share (NameParts)
// around a '*', with the parts that vary in it (spans gives those of a
// name, Varying's and more) as '*' too, and the rest passed through lit
// (nil keeps it). What they share stops where a part that varies starts
// or ends part way in: random characters that two names happen to start
// alike ("tmp.Ab3xQ..." and "tmp.AzK9...") are not shared by the next
// run's, while a number all of them hold in the same place
// ("chart000_27923.xlsx", "chart001_27923.xlsx") stays a '*' of its own:
// "chart*_*.xlsx". ok is false when they share nothing.
func SharedGlob(names []string, spans func(string) []Span, lit func(string) string) (glob string, ok bool) {
	prefix, suffix, one := NameParts(names)
	if one {
		return Join(names[0], spans(names[0]), lit), true
	}
	for _, n := range names {
		start := len(n) - len(suffix)
		for _, s := range spans(n) {
			if s.Start < len(prefix) && len(prefix) < s.End {
				prefix = prefix[:s.Start]
			}
			if s.Start < start && start < s.End {
				suffix, start = n[s.End:], s.End
			}
		}
	}
	if prefix+suffix == "" {
		return "", false
	}
	// The parts that vary within what they share, as the first name has
	// them.
	first := names[0]
	var head, tail []Span
	for _, s := range spans(first) {
		if s.End <= len(prefix) {
			head = append(head, s)
		}
		if off := len(first) - len(suffix); s.Start >= off {
			tail = append(tail, Span{s.Start - off, s.End - off})
		}
	}
	p, x := Join(prefix, head, lit), Join(suffix, tail, lit)
	return strings.TrimSuffix(p, "*") + "*" + strings.TrimPrefix(x, "*"), true
}

func commonPrefix(a, b string) string {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return a[:n]
}

func commonSuffix(a, b string) string {
	n := 0
	for n < len(a) && n < len(b) && a[len(a)-1-n] == b[len(b)-1-n] {
		n++
	}
	return a[len(a)-n:]
}

// Shape is name with every part that may differ from one run to the
// next as a mark, for the --baseline match and the report's collapsed
// lines: two names of one shape are one write, made by the same test at
// two runs. The parts Varying finds (with no pids known) are '*'; every
// run of digits left is '#', whatever its length: a counter, a pid, each
// part of a date or a time ("page-05-14-10-22-31.pdf" is
// "page-#-#-#-#-#.pdf"). Letters are kept: "debug.toml" and "trace.toml"
// are two shapes.
func Shape(name string) string {
	spans := slices.DeleteFunc(Varying(name, nil), func(s Span) bool { return allOf(name[s.Start:s.End], isDigit) })
	return Join(name, spans, func(s string) string { return digits.ReplaceAllString(s, "#") })
}
