package nameshape

import "testing"

func TestShape(t *testing.T) {
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
