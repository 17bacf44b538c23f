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
