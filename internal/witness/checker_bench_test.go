package witness

import (
	"testing"
	"time"
)

// BenchmarkChangeAllowed is the loop's work for one change the tree made
// inside the allowlist, the usual case: which process, which paths,
// allowed, counted for the busy directories.
func BenchmarkChangeAllowed(b *testing.B) {
	c := NewChecker(CheckOptions{Allow: list(b, "allow:\n  - /proj/tests/**\n"), InitialPIDNS: true})
	c.Joined(100, 100)
	we := change(Modify|CloseWrite, "/proj/tests/out/result.json")
	at := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		if fs := c.Change(we, 1, at); fs != nil {
			b.Fatal(fs)
		}
	}
}

// BenchmarkChangeReported is its work for a change outside the allowlist
// at a path already reported: the violation it confirms.
func BenchmarkChangeReported(b *testing.B) {
	c := NewChecker(CheckOptions{Allow: list(b, "allow:\n  - /proj/tests/**\n"), InitialPIDNS: true})
	c.Joined(100, 100)
	c.Noted(100, Group{Op: "open", Path: "/proj/out.log"}, false)
	we := change(Modify, "/proj/out.log")
	at := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		if fs := c.Change(we, 1, at); len(fs) != 1 {
			b.Fatal(fs)
		}
	}
}
