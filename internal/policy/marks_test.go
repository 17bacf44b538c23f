package policy

import (
	"os"
	"path/filepath"
	"slices"
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
	ino := func(p string) uint64 {
		var st syscall.Stat_t
		if err := syscall.Stat(filepath.Join(dir, p), &st); err != nil {
			t.Fatal(err)
		}
		return st.Ino
	}
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
	var got []mark
	for _, m := range ObserveMarks(entries) {
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
	// The deny entry marks itself and the directory above it.
	marks := ObserveMarks(entries)
	if len(marks) != 3 || marks[0].Kind != tracer.MarkDeny || marks[1].Kind != tracer.MarkDeny || marks[2].Kind&tracer.MarkAllow == 0 {
		t.Errorf("marks %v: want the two deny marks, then an allow mark", marks)
	}
}
