package allowlist

import "strings"

// An index finds the first of many patterns that matches a path without
// trying each: patterns are grouped by their literal prefix, and only the
// groups whose prefix is the path or a directory above it can match. So a
// lookup costs a map probe per directory level plus the patterns that
// share those prefixes, whether the list holds ten entries or 100,000.
type index struct {
	pats     []compiled
	byPrefix map[string][]int32 // literal prefix -> indices into pats, ascending
	// maxDepth is the most segments any prefix has: deeper directories of a
	// path need no probe.
	maxDepth int
}

func newIndex(pats []compiled) *index {
	ix := &index{pats: pats, byPrefix: make(map[string][]int32, len(pats))}
	for i, c := range pats {
		p := c.pat.prefix
		ix.byPrefix[p] = append(ix.byPrefix[p], int32(i))
		ix.maxDepth = max(ix.maxDepth, strings.Count(p, "/"))
	}
	return ix
}

// first returns the lowest index of a pattern that matches path, or -1.
// path must be absolute and clean. It does not allocate.
func (ix *index) first(path string) int {
	best := -1
	try := func(prefix string) {
		for _, i := range ix.byPrefix[prefix] {
			if best >= 0 && int(i) >= best {
				return
			}
			if ix.pats[i].pat.Match(path) {
				best = int(i)
				return
			}
		}
	}
	if ix == nil || len(path) == 0 || path[0] != '/' || len(ix.pats) == 0 {
		return -1
	}
	try("") // patterns whose first segment has a wildcard, and "/"
	depth := 0
	for i := 1; i <= len(path) && depth < ix.maxDepth; i++ {
		if i == len(path) || path[i] == '/' {
			depth++
			try(path[:i])
		}
	}
	return best
}
