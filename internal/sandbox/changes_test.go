package sandbox

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// pair writes a real file and its upper copy with the given contents,
// the copy's time set to the real one's unless touched.
func pair(t *testing.T, real, upper []byte, touched bool) (string, string) {
	t.Helper()
	dir := t.TempDir()
	r, u := filepath.Join(dir, "real"), filepath.Join(dir, "upper")
	must(t, os.WriteFile(r, real, 0o644))
	must(t, os.WriteFile(u, upper, 0o644))
	when := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	must(t, os.Chtimes(r, when, when))
	if touched {
		when = when.Add(time.Minute)
	}
	must(t, os.Chtimes(u, when, when))
	return r, u
}

// A copy-up is a change exactly when the bytes, or the attributes,
// differ: sizes first, then the contents side by side, past the first
// buffer too.
func TestCompareFiles(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 10<<10) // 160 KiB: three buffers
	bigEnd := bytes.Clone(big)
	bigEnd[len(bigEnd)-1] = 'x'
	for _, tc := range []struct {
		name          string
		real, upper   []byte
		touched       bool
		want          Kind // "": no change
		wantSameBytes bool
	}{
		{"copied up, left alone", []byte("a = 1\n"), []byte("a = 1\n"), false, "", false},
		{"empty, left alone", nil, nil, false, "", false},
		{"written again the same", []byte("a = 1\n"), []byte("a = 1\n"), true, Attrib, true},
		{"one byte changed, same size, same time", []byte("a = 1\n"), []byte("a = 2\n"), false, Modified, false},
		{"grown", []byte("a = 1\n"), []byte("a = 1\nb = 2\n"), true, Modified, false},
		{"large, left alone", big, big, false, "", false},
		{"large, its last byte changed", big, bigEnd, false, Modified, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, u := pair(t, tc.real, tc.upper, tc.touched)
			var w walker
			c, _ := w.compare(u, r, false)
			switch {
			case tc.want == "" && c != nil:
				t.Fatalf("a change: %+v", c)
			case tc.want == "":
				return
			case c == nil:
				t.Fatalf("no change, want %s", tc.want)
			case c.Kind != tc.want || c.sameData != tc.wantSameBytes:
				t.Fatalf("%s (same bytes %v), want %s (%v)", c.Kind, c.sameData, tc.want, tc.wantSameBytes)
			}
		})
	}
}

// A file that cannot be read is never taken for the same.
func TestSameContentsUnreadable(t *testing.T) {
	r, _ := pair(t, []byte("x"), []byte("x"), false)
	var w walker
	if w.sameContents(r, filepath.Join(t.TempDir(), "gone"), 1) {
		t.Error("the same as a file that is not there")
	}
	// One that ends before the size it had is not the same either.
	if w.sameContents(r, r, 2) {
		t.Error("the same past its end")
	}
}

// Detail reads each file once for its hash and its text: the hashes are
// the contents', the diff is made of text only, and a file the walk
// found the same before and after is hashed once.
func TestDetailHashesAndDiff(t *testing.T) {
	sum := func(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }
	sb := &Sandbox{}
	detail := func(kind Kind, real, upper []byte, touched bool) (*Change, string, string) {
		r, u := pair(t, real, upper, touched)
		var w walker
		c, _ := w.compare(u, r, false)
		if c == nil || c.Kind != kind {
			t.Fatalf("compare: %+v, want %s", c, kind)
		}
		c.Path, c.upper = r, u
		d := sb.Detail(c)
		if d.Before.SHA256 != sum(real) || d.After.SHA256 != sum(upper) {
			t.Errorf("%s: hashes %s %s", kind, d.Before.SHA256, d.After.SHA256)
		}
		return c, d.Diff, d.After.SHA256
	}
	if _, diff, _ := detail(Modified, []byte("a = 1\nb = 2\n"), []byte("a = 9\nb = 2\n"), true); !strings.Contains(diff, "-a = 1\n+a = 9") {
		t.Errorf("text diff:\n%s", diff)
	}
	if _, diff, _ := detail(Modified, []byte("a\x00"), []byte("b\x00"), true); diff != "" {
		t.Errorf("a diff of binary files:\n%s", diff)
	}
	large := bytes.Repeat([]byte("line\n"), maxDiffBytes/5+1)
	if _, diff, _ := detail(Modified, large, append(bytes.Clone(large), "more\n"...), true); diff != "" {
		t.Errorf("a diff of files past %d bytes", maxDiffBytes)
	}
	c, _, _ := detail(Attrib, []byte("same\n"), []byte("same\n"), true)
	if !c.sameData {
		t.Error("written again the same: its bytes not found the same")
	}
}
