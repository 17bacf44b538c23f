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
	// Python's tempfile names: tmp and eight random characters.
	tempName = regexp.MustCompile(`tmp[a-z0-9_]{8}`)
	// A UUID, and a word: letters and digits between other characters.
	uuid = regexp.MustCompile(`[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`)
	word = regexp.MustCompile(`[0-9A-Za-z]+`)
)

// Shape is name with every part that may differ from one run to the
// next as a mark, for the --baseline match: two names of one shape are
// one write, made by the same test at two runs. A UUID, Python's
// tempfile names ("tmp" and eight characters) and a random word are '*':
// a word (letters and digits between other characters) of six or more
// hexadecimal digits with a digit and a letter, or of eight or more
// letters and digits with upper case, lower case and a digit. Every run
// of digits left is '#', whatever its length: a counter, a pid, a date,
// each part of a time ("page-05-14-10-22-31.pdf" is "page-#-#-#-#-#.pdf").
// Letters are kept: "debug.toml" and "trace.toml" are two shapes.
func Shape(name string) string {
	s := uuid.ReplaceAllString(name, "*")
	s = tempName.ReplaceAllString(s, "tmp*")
	return word.ReplaceAllStringFunc(s, func(w string) string {
		if randomWord(w) {
			return "*"
		}
		return digits.ReplaceAllString(w, "#")
	})
}

// randomWord reports whether w looks drawn at random: six or more
// hexadecimal digits with a digit and a letter (a hash, a random hex
// suffix), or eight or more characters with upper case, lower case and a
// digit (mktemp's, base62).
func randomWord(w string) bool {
	var digit, lower, upper, nonHex bool
	for _, c := range w {
		switch {
		case c >= '0' && c <= '9':
			digit = true
		case c >= 'a' && c <= 'z':
			lower = true
			nonHex = nonHex || c > 'f'
		case c >= 'A' && c <= 'Z':
			upper = true
			nonHex = nonHex || c > 'F'
		}
	}
	hex := len(w) >= 6 && digit && (lower || upper) && !nonHex
	return hex || len(w) >= 8 && digit && lower && upper
}

// VaryingName is name with the parts that differ from one run to the
// next as '*': Python's tempfile names, and the numbers numberGlob
// says.
func VaryingName(name string, pids []int) string {
	return NumberGlob(tempName.ReplaceAllString(name, "tmp*"), pids)
}

// NumberGlob is s with its numbers that differ from one run to the next
// as '*': runs of four digits or more, and a number that is one of pids,
// the process IDs of the processes that wrote it. A test that names a
// file after itself ("scratch-355.tmp" by process 355) names it
// differently at each run, and a freshly started machine or container
// has pids of three digits or fewer.
func NumberGlob(s string, pids []int) string {
	return digits.ReplaceAllStringFunc(s, func(d string) string {
		if len(d) >= 4 || slices.ContainsFunc(pids, func(p int) bool { return strconv.Itoa(p) == d }) {
			return "*"
		}
		return d
	})
}

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
