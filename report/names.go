package report

import (
	"regexp"
	"slices"
	"strconv"
)

var (
	// A run of digits: four or more are a number, a time, a pid.
	digits = regexp.MustCompile(`[0-9]+`)
	// Python's tempfile names: tmp and eight random characters.
	tempName = regexp.MustCompile(`tmp[a-z0-9_]{8}`)
)

// varyingName is name with the parts that differ from one run to the
// next as '*': Python's tempfile names, and the numbers numberGlob
// says.
func varyingName(name string, pids []int) string {
	return numberGlob(tempName.ReplaceAllString(name, "tmp*"), pids)
}

// numberGlob is s with its numbers that differ from one run to the next
// as '*': runs of four digits or more, and a number that is one of pids,
// the process IDs of the processes that wrote it. A test that names a
// file after itself ("scratch-355.tmp" by process 355) names it
// differently at each run, and a freshly started machine or container
// has pids of three digits or fewer.
func numberGlob(s string, pids []int) string {
	return digits.ReplaceAllStringFunc(s, func(d string) string {
		if len(d) >= 4 || slices.ContainsFunc(pids, func(p int) bool { return strconv.Itoa(p) == d }) {
			return "*"
		}
		return d
	})
}

// writerPIDs adds to pids the process IDs of the processes that made vs.
func writerPIDs(pids []int, vs []*Violation) []int {
	for _, v := range vs {
		if v.PID > 0 && !slices.Contains(pids, v.PID) {
			pids = append(pids, v.PID)
		}
	}
	return pids
}
