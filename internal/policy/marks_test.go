package policy

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/writewatch/writewatch/internal/allowlist"
	"github.com/writewatch/writewatch/internal/tracer"
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
