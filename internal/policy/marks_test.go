package policy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/writewatch/writewatch/internal/allowlist"
	"github.com/writewatch/writewatch/tracer"
)

func TestKernelMarks(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"tests/golden", "build", "logs", "docs"} {
		os.MkdirAll(filepath.Join(dir, d), 0o755)
	}
	absIno := func(p string) uint64 {
		var st syscall.Stat_t
		if err := syscall.Stat(p, &st); err != nil {
			t.Fatal(err)
		}
		return st.Ino
	}
	ino := func(p string) uint64 { return absIno(filepath.Join(dir, p)) }
	entries := []allowlist.Entry{
		{Kind: allowlist.Allow, Pattern: dir + "/tests/**"},
		{Kind: allowlist.Allow, Pattern: dir + "/build"},
		{Kind: allowlist.Allow, Pattern: dir + "/logs/*.log"},    // a glob: no mark
		{Kind: allowlist.Allow, Pattern: dir + "/missing"},       // nothing to mark
		{Kind: allowlist.Allow, Pattern: dir + "/docs"},          // no deny near it: final
		{Kind: allowlist.Deny, Pattern: dir + "/tests/golden"},   // itself and its directory
		{Kind: allowlist.Deny, Pattern: dir + "/build/gen/*.go"}, // nearest existing directory
	}
	type mark struct {
		ino  uint64
		kind tracer.MarkKind
	}
	var got, moves []mark
	for _, m := range ObserveMarks(entries) {
		if m.Kind == tracer.MarkMoves {
			moves = append(moves, mark{m.Ino, m.Kind})
			continue
		}
		got = append(got, mark{m.Ino, m.Kind})
	}
	// tests/ and build/ get deny marks themselves, as the directories
	// above deny rules: not final. docs/ is.
	want := []mark{
		{ino("tests"), tracer.MarkAllow},
		{ino("build"), tracer.MarkAllow},
		{ino("docs"), tracer.MarkAllow | tracer.MarkFinal},
		{ino("tests/golden"), tracer.MarkDeny},
		{ino("tests"), tracer.MarkDeny},
		{ino("build"), tracer.MarkDeny},
	}
	if !slices.Equal(got, want) {
		t.Errorf("marks %v, want %v", got, want)
	}
	// Renaming an entry of a directory above a deny rule's literal part
	// may move what it protects: build/ and tests/, and the directories
	// from dir up to the root, once each.
	wantMoves := []mark{{ino("build"), tracer.MarkMoves}}
	for d := dir; ; d = filepath.Dir(d) {
		wantMoves = append(wantMoves, mark{absIno(d), tracer.MarkMoves})
		if d == "/" {
			break
		}
	}
	wantMoves = append(wantMoves, mark{ino("tests"), tracer.MarkMoves})
	if !slices.Equal(moves, wantMoves) {
		t.Errorf("moves marks %v, want %v", moves, wantMoves)
	}
}

func TestLiteralPrefix(t *testing.T) {
	for pattern, want := range map[string]string{
		"/a/b/c":     "/a/b/c",
		"/a/*/c":     "/a",
		"/**/x":      "/",
		"/a/b/c*.go": "/a/b",
	} {
		if got := literalPrefix(pattern); got != want {
			t.Errorf("literalPrefix(%q) = %q, want %q", pattern, got, want)
		}
	}
}

// More marks than the kernel is given: every deny mark stays, then the
// allow marks that fit; when the deny marks alone are too many, none.
func TestLimitMarks(t *testing.T) {
	a := func(ino uint64) tracer.Mark { return tracer.Mark{Ino: ino, Kind: tracer.MarkAllow | tracer.MarkFinal} }
	d := func(ino uint64) tracer.Mark { return tracer.Mark{Ino: ino, Kind: tracer.MarkDeny} }
	marks := []tracer.Mark{a(1), a(2), d(3), a(4), d(5), a(6)}
	for _, tc := range []struct {
		limit int
		want  []tracer.Mark
	}{
		{6, marks},
		{4, []tracer.Mark{d(3), d(5), a(1), a(2)}},
		{2, []tracer.Mark{d(3), d(5)}},
		{1, nil},
	} {
		if got := limitMarks(marks, tc.limit); !slices.Equal(got, tc.want) {
			t.Errorf("limit %d: %v, want %v", tc.limit, got, tc.want)
		}
	}
}

// ObserveMarks keeps within maxMarks.
func TestObserveMarksWithinTheLimit(t *testing.T) {
	root := tree(t, "a/", "b/", "c/", "d/", "deny/")
	defer func(n int) { maxMarks = n }(maxMarks)
	maxMarks = 3
	var entries []allowlist.Entry
	for _, d := range []string{"a", "b", "c", "d"} {
		entries = append(entries, allowlist.Entry{Kind: allowlist.Allow, Pattern: root + "/" + d})
	}
	entries = append(entries, allowlist.Entry{Kind: allowlist.Deny, Pattern: root + "/deny"})
	// The deny entry marks itself and the directory above it, and every
	// directory above it for its renames.
	depth := strings.Count(root, "/") + 1
	maxMarks = 2 + depth + 1
	marks := ObserveMarks(entries)
	if len(marks) != maxMarks || marks[0].Kind != tracer.MarkDeny || marks[1].Kind != tracer.MarkDeny ||
		marks[len(marks)-1].Kind&tracer.MarkAllow == 0 {
		t.Errorf("marks %v: want the two deny marks, %d moves marks, then an allow mark", marks, depth)
	}
	for _, m := range marks[2 : 2+depth] {
		if m.Kind != tracer.MarkMoves {
			t.Errorf("marks %v: want the two deny marks, %d moves marks, then an allow mark", marks, depth)
		}
	}
}
