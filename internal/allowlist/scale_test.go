package allowlist

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// bigConfig writes a config with n entries made by entry(i) into a new
// project directory and returns the directory.
func bigConfig(tb testing.TB, n int, entry func(i int) string) string {
	tb.Helper()
	dir, err := filepath.EvalSymlinks(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	var cfg strings.Builder
	cfg.WriteString("allow:\n")
	for i := range n {
		cfg.WriteString("  - ")
		cfg.WriteString(entry(i))
		cfg.WriteByte('\n')
	}
	cfg.WriteString("deny:\n  - .git\n  - tests/golden\n")
	if err := os.WriteFile(filepath.Join(dir, ConfigFileName), []byte(cfg.String()), 0o644); err != nil {
		tb.Fatal(err)
	}
	for _, d := range []string{"tests/golden", "build/out1"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			tb.Fatal(err)
		}
	}
	return dir
}

func literalEntry(i int) string { return fmt.Sprintf("build/out%d/obj/file%d.o", i%1000, i) }
func globEntry(i int) string    { return fmt.Sprintf("gen/d%d/**/*.tmp%d", i%100, i) }

func loadBig(tb testing.TB, dir string) *List {
	tb.Helper()
	l, err := Load(Options{WorkDir: dir, Getenv: mapEnv(nil)})
	if err != nil {
		tb.Fatal(err)
	}
	return l
}

// The matches of a big list are those of its entries, in order.
func TestBigLists(t *testing.T) {
	for _, tt := range []struct {
		name  string
		n     int
		entry func(int) string
		yes   []string // relative to the project
		no    []string
	}{
		{"literals", 100000, literalEntry,
			[]string{"build/out7/obj/file99007.o", "build/out999/obj/file999.o/x", "build/out0/obj/file0.o"},
			[]string{"build/out7/obj/file99008.o", "build/out7/obj", "build/out1000/obj/file1000.o", "tests/golden/x", "src/a.go", "."}},
		{"globs", 10000, globEntry,
			[]string{"gen/d7/a/b/x.tmp9907", "gen/d99/y.tmp9999", "gen/d0/z.tmp0"},
			[]string{"gen/d7/a/b/x.tmp9908", "gen/d100/x.tmp100", "gen/x.tmp1", "tests/golden/x.tmp5"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := bigConfig(t, tt.n, tt.entry)
			l := loadBig(t, dir)
			for _, p := range tt.yes {
				if ok, e := l.Match(dir + "/" + p); !ok || e == nil || !strings.HasPrefix(e.Source, l.ConfigFile()+":") {
					t.Errorf("%s: %v, %+v; want allowed by the config", p, ok, e)
				}
			}
			for _, p := range tt.no {
				if ok, e := l.Match(filepath.Join(dir, p)); ok {
					t.Errorf("%s: allowed by %+v", p, e)
				}
			}
			// The project is under the temp dir; beside it, tmp allows.
			if ok, e := l.Match(dir + "-other/x"); !ok || e.Source != "default:tmp" {
				t.Errorf("beside the project: %v, %+v", ok, e)
			}
		})
	}
}

func benchMatchBig(b *testing.B, n int, entry func(int) string, paths []string) {
	dir := bigConfig(b, n, entry)
	l := loadBig(b, dir)
	for i := range paths {
		paths[i] = dir + "/" + paths[i]
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		l.Match(paths[i%len(paths)])
	}
}

func BenchmarkMatch100kLiterals(b *testing.B) {
	benchMatchBig(b, 100000, literalEntry, []string{
		"build/out7/obj/file99007.o", "build/out7/obj/file99008.o", "src/main.go", "tests/golden/x",
	})
}

func BenchmarkMatch10kGlobs(b *testing.B) {
	benchMatchBig(b, 10000, globEntry, []string{
		"gen/d7/a/b/x.tmp9907", "gen/d7/a/b/x.tmp9908", "src/main.go", "tests/golden/x",
	})
}

func benchLoadBig(b *testing.B, n int, entry func(int) string) {
	dir := bigConfig(b, n, entry)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		loadBig(b, dir)
	}
}

func BenchmarkLoad100kLiterals(b *testing.B) { benchLoadBig(b, 100000, literalEntry) }
func BenchmarkLoad10kGlobs(b *testing.B)     { benchLoadBig(b, 10000, globEntry) }
