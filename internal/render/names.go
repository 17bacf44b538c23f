package render

import (
	"slices"

	"github.com/writewatch/writewatch/report"
)

// writerPIDs adds to pids the process IDs of the processes that made vs.
func writerPIDs(pids []int, vs []*report.Violation) []int {
	for _, v := range vs {
		if v.PID > 0 && !slices.Contains(pids, v.PID) {
			pids = append(pids, v.PID)
		}
	}
	return pids
}
