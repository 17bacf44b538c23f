package nameshape

import "testing"

func TestVaryingName(t *testing.T) {
	for _, tt := range []struct {
		name string
		pids []int
		want string
	}{
		// Numbers, pids, Python's default names, as before.
		{"outline_demo_158482901.pdf", nil, "outline_demo_*.pdf"},
		{"scratch-355.tmp", []int{355}, "scratch-*.tmp"},
		{"scratch-355.tmp", nil, "scratch-355.tmp"},
		{"tmpk3j_x9ab", nil, "tmp*"},
		{"tmpabcdefgh.txt", nil, "tmp*.txt"},
		// Python's tempfile with a prefix and suffix (an atomic write).
		{"info.json.k3j_x9ab.tmp", nil, "info.json.*.tmp"},
		{"info.json.q8dk2m1a.tmp", nil, "info.json.*.tmp"},
		{"info.json.t4_7wbzh.tmp", nil, "info.json.*.tmp"},
		// mktemp's, mkdtemp's and Rust's random characters.
		{"tmp.Xa3bQ9zLkP-dotdrop-tests", nil, "tmp.*-dotdrop-tests"},
		{"tmp.aBcDeFgHiJ", nil, "tmp.*"},
		{"foo-AbC12x", nil, "foo-*"},
		{"foo-Og28mp", nil, "foo-*"},
		{"tmp.tmpiXraWgm-x", nil, "tmp.*-x"},
		{"tmp9v7o_v39", nil, "tmp*"},
		{"info.json.v9u34z_o.tmp", nil, "info.json.*.tmp"},
		{"info.json.43ipoc26.tmp", nil, "info.json.*.tmp"},
		{".tmpAbC12x", nil, ".tmp*"},
		// Hashes and UUIDs.
		{"3f9a0c1e7b.cache", nil, "*.cache"},
		{"123e4567-e89b-12d3-a456-426614174000.json", nil, "*.json"},
		// Words, words with numbers, acronyms: kept.
		{"TestHomeConfig.json", nil, "TestHomeConfig.json"},
		{"utf8mb4.sql", nil, "utf8mb4.sql"},
		{"v1beta1", nil, "v1beta1"},
		{"iPhone12.png", nil, "iPhone12.png"},
		{"IOError.log", nil, "IOError.log"},
		{"sha256sum.txt", nil, "sha256sum.txt"},
		{"HTTPServer2.go", nil, "HTTPServer2.go"},
		{"test_001.txt", nil, "test_001.txt"},
		{"settings.json", nil, "settings.json"},
		{"new_file.txt", nil, "new_file.txt"},
		{"deadbeef", nil, "deadbeef"},
		{"config.toml", nil, "config.toml"},
		{"xterm-256color", nil, "xterm-256color"},
		{"libgtk-python27.so", nil, "libgtk-python27.so"},
		{"app-Python3.cfg", nil, "app-Python3.cfg"},
		{"tmp.backup", nil, "tmp.backup"},
		{"tmpfile_backup.txt", nil, "tmpfile_backup.txt"},
	} {
		if got := VaryingName(tt.name, tt.pids); got != tt.want {
			t.Errorf("VaryingName(%q, %v) = %q, want %q", tt.name, tt.pids, got, tt.want)
		}
	}
}

func TestGlobEscapes(t *testing.T) {
	lit := func(s string) string { return "<" + s + ">" }
	if got, want := Glob("a[1]-tmp.Xa3bQ9zLkP.log", nil, lit), "<a[1]-tmp.>*<.log>"; got != want {
		t.Errorf("Glob = %q, want %q", got, want)
	}
}

func TestSharedGlob(t *testing.T) {
	spans := func(n string) []Span { return Varying(n, nil) }
	for _, tt := range []struct {
		names []string
		want  string
	}{
		// Random characters that happen to start alike are not shared.
		{[]string{"tmp.AbQ3xKz9Lm-x", "tmp.AzK9wQ2mPb-x"}, "tmp.*-x"},
		{[]string{"run-10", "run-12"}, "run-*"},
		{[]string{"chart1.xlsx", "chart2.xlsx"}, "chart*.xlsx"},
		{[]string{"info.json", "info.json.k3j_x9ab.tmp"}, "info.json*"},
		// A number all of them hold in the same place stays a '*'.
		{[]string{"chart000_27923.xlsx", "chart001_27923.xlsx"}, "chart*_*.xlsx"},
		{[]string{"same.txt", "same.txt"}, "same.txt"},
	} {
		got, ok := SharedGlob(tt.names, spans, nil)
		if !ok || got != tt.want {
			t.Errorf("SharedGlob(%q) = %q, %v; want %q", tt.names, got, ok, tt.want)
		}
	}
	if g, ok := SharedGlob([]string{"alpha.toml", "beta.ini"}, spans, nil); ok {
		t.Errorf("SharedGlob of names that share nothing: %q", g)
	}
}

func TestAlike(t *testing.T) {
	names := []string{
		"info.json.pisfjhwy.tmp", "info.json.k3j_x9ab.tmp", "info.json.btroacis.tmp",
		"report-summary.txt", "report-details.txt",
		"outline_demo_158482901.pdf", "outline_demo_160234567.pdf",
		"config.json", "config.yaml",
	}
	got := Alike(names, nil)
	for _, n := range names {
		glob := Join(n, Merge(Varying(n, nil), got[n]), nil)
		want := map[string]string{
			"info.json.pisfjhwy.tmp":     "info.json.*.tmp",
			"info.json.k3j_x9ab.tmp":     "info.json.*.tmp",
			"info.json.btroacis.tmp":     "info.json.*.tmp",
			"outline_demo_158482901.pdf": "outline_demo_*.pdf",
			"outline_demo_160234567.pdf": "outline_demo_*.pdf",
		}[n]
		if want == "" {
			want = n
		}
		if glob != want {
			t.Errorf("%s: %q, want %q", n, glob, want)
		}
	}
}
func TestShape(t *testing.T) {
	for _, c := range []struct{ a, b string }{
		{"page_cover-05-14-10-22-31.pdf", "page_cover-12-01-09-05-02.pdf"}, // a timestamp of two-digit runs
		{"run-3.log", "run-12.log"},                                        // a counter
		{"outline_demo_158482901.pdf", "outline_demo_2342.pdf"},            // a number
		{"scratch-355.tmp", "scratch-41200.tmp"},                           // a pid
		{"cache-3f9a2c81.bin", "cache-9be01d7f.bin"},                       // random hexadecimal
		{"job-0b7e4f2a-91c3-4d5e-8f00-1a2b3c4d5e6f", "job-7c1d0e9b-2f4a-4b6c-a1d2-e3f4a5b6c7d8"},
		{"tmpab_c1234.txt", "tmpzzzzzzzz.txt"}, // Python's tempfile
		{"tmp.aB3xZ9qLm2", "tmp.Qw7erTyUi0"},   // mktemp
	} {
		if Shape(c.a) != Shape(c.b) {
			t.Errorf("%s and %s: shapes %q and %q, want one", c.a, c.b, Shape(c.a), Shape(c.b))
		}
	}
	for _, c := range []struct{ a, b string }{
		{"debug.toml", "config.toml"},
		{"debug.toml", "trace.toml"},
		{"page_cover-05.pdf", "page_intro-05.pdf"},
		{"page-05.pdf", "page-05.txt"},
		{"run-3.log", "run3.log"},
		{"report.json", "report2.json"},
		{"deadbeef.bin", "cafebabe.bin"}, // hexadecimal without a digit: words
		{"chart1.xlsx", "graph1.xlsx"},
	} {
		if Shape(c.a) == Shape(c.b) {
			t.Errorf("%s and %s: one shape %q, want two", c.a, c.b, Shape(c.a))
		}
	}
}

// Names of one kind of the report's collapsed lines: one shape; names
// of unrelated files: shapes of their own.
func TestShapeCollapses(t *testing.T) {
	for _, tt := range []struct{ a, b string }{
		{"chart000_31081.xlsx", "chart001_4242.xlsx"},
		{"run-1.log", "run-30.log"},
		{"tmpab3_k9zq.json", "tmp0kq7x2me.json"},
		{"123e4567-e89b-12d3-a456-426614174000.bin", "9f0b2c1e-0a4d-4c3b-8e7f-1a2b3c4d5e6f.bin"},
		{"cache-3f9a1c2be4d5.db", "cache-0011aabbccdd.db"},
	} {
		if Shape(tt.a) != Shape(tt.b) {
			t.Errorf("Shape(%q) = %q, Shape(%q) = %q: want one shape", tt.a, Shape(tt.a), tt.b, Shape(tt.b))
		}
	}
	for _, tt := range []struct{ a, b string }{
		{"setup.cfg", "notes.txt"},
		{"out.json", "out.yaml"},
		{"VERSION", "CHANGES"},
		{"deadbeefcafe.txt", "facadebeefed.txt"}, // words, not numbers
	} {
		if Shape(tt.a) == Shape(tt.b) {
			t.Errorf("%q and %q have one shape, %q", tt.a, tt.b, Shape(tt.a))
		}
	}
}
