package policy

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/writewatch/writewatch/internal/allowlist"
	"github.com/writewatch/writewatch/internal/pathwalk"
	"github.com/writewatch/writewatch/tracer"
)

// ObserveMarks turns the allowlist into inode marks the kernel can check
// while it walks a path, so allowed writes need not reach user space:
//
//   - an allow entry that names an existing file or directory literally
//     (optionally ending in /**) marks it allowed;
//   - every deny entry marks, as "ask user space", the nearest existing
//     directory above the literal part of its pattern, and the entry's own
//     path when it exists. A write at or under such a mark is always judged
//     by path in user space, so deny still wins;
//   - every existing directory above the literal part of a deny entry's
//     pattern is marked "moves": renaming one of its entries may move what
//     the entry protects, so such renames are judged in user space (the
//     renames further down are not).
//
// Glob allow entries give no mark: their writes are judged in user space.
// Marks follow inodes: an allowed directory renamed during the run stays
// allowed in the kernel's eyes.
//
// These are the marks of a run without --enforce, where a mark only
// spares user space a write: no directory is read, and each entry sets at
// most two marks. Under --enforce, what the marks do not allow is
// refused, so the marks are the plan's grants instead (Plan.Marks).
func ObserveMarks(entries []allowlist.Entry) []tracer.Mark {
	var (
		marks   []tracer.Mark
		allowAt = map[int]string{}  // index in marks of each allow mark: its path
		denied  []string            // paths with a deny mark
		moves   = map[string]bool{} // literal prefixes of deny entries
		paths   []string
	)
	for _, e := range entries {
		if lit := strings.TrimSuffix(e.Pattern, "/**"); !strings.ContainsAny(lit, `*?[\`) {
			paths = append(paths, lit)
		}
	}
	in := newInodes(paths)
	add := func(path string, kind tracer.MarkKind) bool {
		m, ok := in.mark(path, kind)
		if !ok {
			return false
		}
		switch kind {
		case tracer.MarkAllow:
			allowAt[len(marks)] = path
		case tracer.MarkDeny:
			denied = append(denied, path)
		}
		marks = append(marks, m)
		return true
	}
	for _, e := range entries {
		lit := strings.TrimSuffix(e.Pattern, "/**")
		literal := !strings.ContainsAny(lit, `*?[\`)
		switch e.Kind {
		case allowlist.Allow:
			if literal {
				add(lit, tracer.MarkAllow)
			}
		case allowlist.Deny:
			prefix := literalPrefix(e.Pattern)
			if literal {
				add(lit, tracer.MarkDeny)
			}
			for dir := filepath.Dir(prefix); ; dir = filepath.Dir(dir) {
				if add(dir, tracer.MarkDeny) || dir == "/" {
					break
				}
			}
			moves[prefix] = true
		}
	}
	marks = append(marks, movesMarks(in, moves)...)
	// An allowed directory with no deny mark at or above it decides a
	// write as soon as the kernel reaches it on the way up.
	for i, path := range allowAt {
		final := true
		for _, d := range denied {
			if pathwalk.Within(path, d) {
				final = false
				break
			}
		}
		if final {
			marks[i].Kind |= tracer.MarkFinal
		}
	}
	return limitMarks(marks, maxMarks)
}

// movesMarks marks every existing directory strictly above each of the
// prefixes, once, as MarkMoves.
func movesMarks(in *inodes, prefixes map[string]bool) []tracer.Mark {
	var marks []tracer.Mark
	done := map[string]bool{}
	for _, prefix := range slices.Sorted(maps.Keys(prefixes)) {
		for dir := prefix; dir != "/"; {
			dir = filepath.Dir(dir)
			if done[dir] {
				break
			}
			done[dir] = true
			if m, ok := in.mark(dir, tracer.MarkMoves); ok {
				marks = append(marks, m)
			}
		}
	}
	return marks
}

// maxMarks bounds the marks of a run without --enforce (an inode mark is
// about 70 bytes of kernel memory).
var maxMarks = 1 << 19

// limitMarks keeps at most limit marks without changing a verdict: marks
// only spare user space the writes the kernel can tell are allowed. Every
// deny mark stays, since an allow mark without them would settle writes a
// deny entry names; then allow marks, in order, as many as fit. A write
// under an allow mark that was dropped is judged in user space. When the
// deny marks alone are too many, none is kept: every write is judged in
// user space.
func limitMarks(marks []tracer.Mark, limit int) []tracer.Mark {
	if len(marks) <= limit {
		return marks
	}
	const keep = tracer.MarkDeny | tracer.MarkMoves
	kept := make([]tracer.Mark, 0, limit)
	for _, m := range marks {
		if m.Kind&keep != 0 {
			kept = append(kept, m)
		}
	}
	if len(kept) > limit {
		return nil
	}
	for _, m := range marks {
		if m.Kind&keep == 0 && len(kept) < limit {
			kept = append(kept, m)
		}
	}
	return kept
}

// Marks are the plan's marks for the BPF programs: an allowed mark on
// every grant, and a denied mark on every denied path that exists, so a
// hard link into a granted directory does not free it.
func (p *Plan) Marks() []tracer.Mark {
	var marks []tracer.Mark
	in := p.inodes
	if in == nil {
		in = newInodes(nil)
	}
	add := func(path string, kind tracer.MarkKind) {
		if m, ok := in.mark(path, kind); ok {
			marks = append(marks, m)
		}
	}
	// Reaching a grant decides: every grant is final. A grant may lie
	// under a denied path (the project's own tests/ under the project a
	// default covers), never above one: the nearest mark decides.
	for _, g := range p.Grants {
		add(g.Path, tracer.MarkAllow|tracer.MarkFinal)
	}
	for _, d := range p.Denied {
		add(d, tracer.MarkDeny)
	}
	return marks
}

// mark marks the inode at path, if there is one.
func (c *inodes) mark(path string, kind tracer.MarkKind) (tracer.Mark, bool) {
	in, ok := c.stat(path)
	if !ok {
		return tracer.Mark{}, false
	}
	return tracer.Mark{Dev: in.Dev, Ino: in.Ino, Kind: kind}, true
}

// literalPrefix is the part of a pattern before its first glob segment.
func literalPrefix(pattern string) string {
	var parts []string
	for _, seg := range strings.Split(pattern, "/") {
		if strings.ContainsAny(seg, `*?[\`) {
			break
		}
		parts = append(parts, seg)
	}
	if p := strings.Join(parts, "/"); p != "" {
		return p
	}
	return "/"
}
