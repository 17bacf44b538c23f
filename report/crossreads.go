package report

import (
	"time"
)

// CrossTestRead is one test reading a file outside the allowlist that
// another test of the same run had created or changed: the outcome of the
// reader may depend on which tests ran before it, and in which order.
type CrossTestRead struct {
	// Path is the file as the reader opened it.
	Path string `json:"path"`
	// WrittenBy are the tests that wrote the file before the read, in the
	// order of their first write.
	WrittenBy []Access `json:"written_by"`
	// ReadBy is the test (or phase outside tests) that read it.
	ReadBy Access `json:"read_by"`
}

// Access is one test's write or read of a file: who, with the same
// attribution fields a Violation has, which process, and when first.
type Access struct {
	// Op is the write's operation (a writer only).
	Op string `json:"op,omitempty"`
	Who
	PID   int       `json:"pid"`
	Comm  string    `json:"comm"`
	First time.Time `json:"first"`
}

// AccessOf is the access that violation v describes: its first
// occurrence's test, process and time.
func AccessOf(v *Violation) Access {
	return Access{Op: v.Op, Who: v.Who, PID: v.PID, Comm: v.Comm, First: v.First}
}
