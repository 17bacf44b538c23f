package nameshape

import "testing"

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
