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
	// A UUID, and a run of eight hexadecimal digits or more (a hash, a
	// random name).
	uuid = regexp.MustCompile(`[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`)
	hex  = regexp.MustCompile(`[0-9a-f]{8,}`)
)

// Shape is name with what differs between names of one kind as '*':
// UUIDs, runs of eight hexadecimal digits or more that hold a digit,
// Python's tempfile names, and every run of digits. "chart000_31081.xlsx"
// and "chart001_4242.xlsx" have one shape, "chart*_*.xlsx"; "setup.cfg"
// and "notes.txt" have their own.
func Shape(name string) string {
	s := uuid.ReplaceAllString(name, "*")
	s = hex.ReplaceAllStringFunc(s, func(h string) string {
		if strings.ContainsAny(h, "0123456789") {
			return "*"
		}
		return h
	})
	s = tempName.ReplaceAllString(s, "tmp*")
	return digits.ReplaceAllString(s, "*")
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
