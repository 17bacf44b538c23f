package allowlist

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// The index finds the same pattern as trying each in order.
func TestIndexFindsTheFirstMatch(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	segs := []string{"a", "b", "ab", "*", "a*", "**", "[ab]"}
	names := []string{"a", "b", "ab", "ba"}
	randPath := func(pieces []string, n int) string {
		var b strings.Builder
		for range n {
			b.WriteByte('/')
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		if b.Len() == 0 {
			return "/"
		}
		return b.String()
	}
	found := 0
	for range 300 {
		var pats []compiled
		for range 1 + rng.IntN(30) {
			p, err := Compile(randPath(segs, rng.IntN(4)))
			if err != nil {
				t.Fatal(err)
			}
			pats = append(pats, compiled{pat: p})
		}
		ix := newIndex(pats)
		for range 100 {
			path := randPath(names, rng.IntN(6))
			want := -1
			for i, c := range pats {
				if c.pat.Match(path) {
					want = i
					break
				}
			}
			if got := ix.first(path); got != want {
				t.Fatalf("first(%q) = %d, want %d; patterns %v", path, got, want, pats)
			}
			if want >= 0 {
				found++
			}
		}
	}
	if found < 5000 {
		t.Errorf("only %d of 30000 lookups matched: too few to tell much", found)
	}
	if (*index)(nil).first("/a") != -1 || newIndex(nil).first("/a") != -1 {
		t.Error("an empty index matches")
	}
}
