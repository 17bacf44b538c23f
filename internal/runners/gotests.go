package runners

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/writewatch/writewatch/internal/gobin"
)

// SelectGoTests keeps the test functions of a Go test binary that its
// arguments (args, its command line) have it run, as the testing
// package selects top-level tests: -test.run's pattern (its part before
// the first '/', in each '|' alternative) matches the name, and no
// -test.skip alternative of one part does. With -test.list, none runs.
func SelectGoTests(funcs []gobin.TestFunc, args []string) ([]gobin.TestFunc, error) {
	flags := testFlags(args)
	if _, ok := flags["list"]; ok {
		return nil, nil
	}
	run, err := compileMatch(flags["run"])
	if err != nil {
		return nil, fmt.Errorf("-test.run: %w", err)
	}
	skip, err := compileMatch(flags["skip"])
	if err != nil {
		return nil, fmt.Errorf("-test.skip: %w", err)
	}
	var out []gobin.TestFunc
	for _, f := range funcs {
		if ok, _ := run.top(f.Name); !ok && run != nil {
			continue
		}
		if ok, partial := skip.top(f.Name); ok && !partial {
			continue
		}
		out = append(out, f)
	}
	return out, nil
}

// testFlags reads the testing package's -test.run, -test.skip and
// -test.list a test binary was given (-test.run=X or -test.run X, with
// one dash or two; go test passes the first), the last of each.
func testFlags(args []string) map[string]string {
	flags := map[string]string{}
	for i := 1; i < len(args); i++ {
		if args[i] == "--" {
			break
		}
		flag, ok := strings.CutPrefix(args[i], "-")
		if !ok {
			continue
		}
		name, ok := strings.CutPrefix(strings.TrimPrefix(flag, "-"), "test.")
		if !ok {
			continue
		}
		name, value, hasValue := strings.Cut(name, "=")
		if name != "run" && name != "skip" && name != "list" {
			continue
		}
		if !hasValue && i+1 < len(args) {
			i++
			value = args[i]
		}
		flags[name] = value
	}
	return flags
}

// match is a -test.run or -test.skip pattern: its '|' alternatives,
// each the regexps of its '/'-separated parts. nil: no pattern.
type match [][]*regexp.Regexp

// top says whether the pattern selects top-level test name: an
// alternative whose first part matches it; partial when that
// alternative has more parts (it selects subtests).
func (m match) top(name string) (ok, partial bool) {
	for _, alt := range m {
		if alt[0].MatchString(name) {
			return true, len(alt) > 1
		}
	}
	return false, false
}

// compileMatch compiles pattern as the testing package splits it: at
// each '|' and '/' outside brackets and parentheses. "" is no pattern.
func compileMatch(pattern string) (match, error) {
	if pattern == "" {
		return nil, nil
	}
	var m match
	for _, alt := range splitOutside(pattern, '|') {
		var parts []*regexp.Regexp
		for _, p := range splitOutside(alt, '/') {
			re, err := regexp.Compile(p)
			if err != nil {
				return nil, err
			}
			parts = append(parts, re)
		}
		m = append(m, parts)
	}
	return m, nil
}

// splitOutside splits s at sep where it is outside brackets and
// parentheses, and not escaped.
func splitOutside(s string, sep byte) []string {
	var parts []string
	depth, bracket, start := 0, false, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			i++
		case bracket:
			bracket = c != ']'
		case c == '[':
			bracket = true
		case c == '(':
			depth++
		case c == ')':
			depth--
		case c == sep && depth == 0:
			parts = append(parts, s[start:i])
			start = i + 1
		}
	}
	return append(parts, s[start:])
}
