package main

import (
	"fmt"
	"path/filepath"
)

// crossReads are the micro workloads of read-only opens once a file was
// written outside the allowlist, so that the kernel checks reads against
// a set of written files that is not empty (bpf/lib/reads.h): reads of
// another file, a read-heavy suite's common case, to compare with "read-
// only opens", where the set is empty and reads take the fast path; and
// reads of the written file itself, a test reading what another wrote
// over and over, each counted as a repeat of the one record sent.
func (b *bench) crossReads(n int) []workload {
	sh := func(read string, n int) []string {
		return []string{"sh", "-c", fmt.Sprintf("%s write %s 1 && %s read %s %d", b.micro, b.out, b.micro, read, n)}
	}
	var workloads []workload
	for _, c := range []struct{ name, read, target string }{
		{"micro: read-only opens, a file written", "/etc/hostname", "≈ read-only opens"},
		{"micro: read-only opens of the file written", filepath.Join(b.out, "micro.txt"), "(none)"},
	} {
		workloads = append(workloads, workload{name: fmt.Sprintf("%s (%d)", c.name, n), argv: sh(c.read, n),
			small: sh(c.read, max(n/100, 1)), runs: b.microRuns(), prepare: clean(b.out), violates: true, targets: []target{vsBare(c.target, nil)}})
	}
	return workloads
}
