package allowlist

import "testing"

func TestCanMatchBelow(t *testing.T) {
	for _, tc := range []struct {
		pattern, dir string
		want         bool
	}{
		{"/proj/tests/golden", "/proj/tests", true},
		{"/proj/tests/golden", "/proj", true},
		{"/proj/tests/golden", "/", true},
		{"/proj/tests/golden", "/proj/tests/golden", true}, // its descendants
		{"/proj/tests/golden", "/proj/tests/sub", false},
		{"/proj/tests/golden", "/proj/testsx", false},
		{"/proj/tests/golden", "/other", false},
		{"/proj/tests/*.lock", "/proj/tests", true},
		{"/proj/tests/*.lock", "/proj/tests/sub", false},
		{"/proj/tests/*.lock", "/proj/tests/a.lock", true}, // and everything under it
		{"/proj/tests/[ab]/x", "/proj/tests/a", true},
		{"/proj/tests/[ab]/x", "/proj/tests/c", false},
		{"/proj/tests/[ab]/x", "/proj/tests/a/y", false},
		{"/**/secret", "/home/u/src", true},
		{"/proj/**/keep/x", "/proj/a/b/keep", true},
		{"/proj/**/keep/x", "/proj/a/b", true},
		{"/proj/**/keep/x", "/elsewhere", false},
	} {
		if got := MustCompile(tc.pattern).CanMatchBelow(tc.dir); got != tc.want {
			t.Errorf("%s.CanMatchBelow(%s) = %v, want %v", tc.pattern, tc.dir, got, tc.want)
		}
	}
}
