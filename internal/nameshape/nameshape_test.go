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
