package session

import (
	"cmp"
	"slices"
	"strings"

	"github.com/writewatch/writewatch/report"
)

// groupKey identifies a Violation group.
type groupKey struct {
	op, path, role string
	who            string // package, test, phase, fixture and ambiguous set
}

// Groups groups raw occurrences into Violations by (Op, Path, Role) and
// by who wrote (Runner, Package, Test, Phase, Fixture, AmbiguousTests).
// The zero value is ready to use. A Groups is not safe for concurrent use.
type Groups struct {
	index map[groupKey]int
	// Each group is allocated on its own: a run with many violations
	// does not copy them all each time the list grows.
	groups []*report.Violation
	// paths are the groups of each path, in the order they were added.
	paths map[string][]int
	// Limit caps the number of groups kept (0: no cap). Occurrences of
	// groups beyond it are only counted, in Unlisted, so that a run
	// writing outside the allowlist without end keeps its memory bounded.
	Limit    int
	Unlisted uint64
}

// NewGroups returns an empty Groups.
func NewGroups() *Groups {
	return &Groups{index: make(map[groupKey]int)}
}

// Add records v. The first occurrence of an (Op, Path, Role, who) keeps its
// process, time, requested path and other details; later ones only add to
// its Count, and to its Failed (and give it an Errno, when it had none)
// for calls that failed. v.Count is the number of occurrences v stands
// for, 1 when it is zero; v.Failed how many of them failed, all of them
// when it is zero and v.Errno is set. An empty Action is set to
// ActionReported.
//
// A repeat seen another way (SeenBy) adds that way to the group's.
//
// Adding a repeat costs a map lookup and does not allocate.
func (b *Groups) Add(v report.Violation) {
	n := v.Count
	if n <= 0 {
		n = 1
	}
	v.Failed = min(v.FailedCalls(), n)
	k := groupKey{op: v.Op, path: v.Path, role: v.Role, who: v.Who.Key()}
	if i, ok := b.index[k]; ok {
		b.groups[i].Count += n
		b.failed(i, v.Failed, v.Errno)
		for _, by := range v.SeenBy {
			b.seen(i, by)
		}
		return
	}
	if b.Full() {
		b.Unlisted += uint64(n)
		return
	}
	if b.index == nil {
		b.index = make(map[groupKey]int)
	}
	v.Count = n
	if v.Action == "" {
		v.Action = report.ActionReported
	}
	b.index[k] = len(b.groups)
	if b.paths == nil {
		b.paths = make(map[string][]int)
	}
	b.paths[v.Path] = append(b.paths[v.Path], len(b.groups))
	g := new(report.Violation) // not &v: v would then be on the heap for repeats too
	*g = v
	b.groups = append(b.groups, g)
}

// Has reports whether the group of (op, path, role) by who was added.
func (b *Groups) Has(op, path, role, who string) bool {
	_, ok := b.index[groupKey{op: op, path: path, role: role, who: who}]
	return ok
}

// Full reports whether a new group would go over Limit.
func (b *Groups) Full() bool { return b.Limit > 0 && len(b.groups) >= b.Limit }

// Len returns the number of groups so far.
func (b *Groups) Len() int { return len(b.groups) }

// Repeat counts one more occurrence of (op, path, role) by who (see
// Who.Key) when it was added before and reports whether it was; callers
// use it to skip building a full Violation for repeats. errno is the
// name of the call's error, "" when it succeeded.
func (b *Groups) Repeat(op, path, role, who, errno string) bool {
	return b.RepeatN(op, path, role, who, 1, errno)
}

// RepeatN is Repeat for n occurrences at once, which all failed with
// errno, or all succeeded ("").
func (b *Groups) RepeatN(op, path, role, who string, n int, errno string) bool {
	i, ok := b.index[groupKey{op: op, path: path, role: role, who: who}]
	if ok {
		b.groups[i].Count += n
		if errno != "" {
			b.failed(i, n, errno)
		}
	}
	return ok
}

// failed counts n more failed calls of group i, the first of which
// failed with errno.
func (b *Groups) failed(i, n int, errno string) {
	if n <= 0 {
		return
	}
	g := b.groups[i]
	g.Failed += n
	if g.Errno == "" {
		g.Errno = errno
	}
}

// MarkSeen adds a way the group of (op, path, role) by who (see Who.Key)
// was seen (a SeenBy constant), without counting an occurrence, and
// reports whether there is such a group.
func (b *Groups) MarkSeen(op, path, role, who, by string) bool {
	i, ok := b.index[groupKey{op: op, path: path, role: role, who: who}]
	if ok {
		b.seen(i, by)
	}
	return ok
}

// seen adds by to group i's SeenBy, keeping SeenBySyscall first.
func (b *Groups) seen(i int, by string) {
	g := b.groups[i]
	if slices.Contains(g.SeenBy, by) {
		return
	}
	g.SeenBy = append(slices.Clip(g.SeenBy), by)
	slices.SortFunc(g.SeenBy, func(a, c string) int { return cmp.Compare(seenRank(a), seenRank(c)) })
}

func seenRank(by string) int {
	switch by {
	case report.SeenBySyscall:
		return 0
	case report.SeenByFilesystem:
		return 1
	case report.SeenBySandbox:
		return 2
	}
	return 3
}

// Violations returns the groups sorted by Path, then Op, then Role. The
// slice is a new one on each call and is empty, not nil, when nothing was
// added.
func (b *Groups) Violations() []report.Violation {
	out := make([]report.Violation, len(b.groups))
	for i, g := range b.groups {
		out[i] = *g
	}
	slices.SortFunc(out, compareViolations)
	return out
}

func compareViolations(a, b report.Violation) int {
	if c := cmp.Or(strings.Compare(a.Path, b.Path), strings.Compare(a.Op, b.Op), strings.Compare(a.Role, b.Role)); c != 0 {
		return c
	}
	return strings.Compare(a.Who.Key(), b.Who.Key()) // built only on a tie
}

// AtPath are the groups of path, in the order they were added.
func (b *Groups) AtPath(path string) []*report.Violation {
	var out []*report.Violation
	for _, i := range b.paths[path] {
		out = append(out, b.groups[i])
	}
	return out
}

// SeeAll adds a way every group of path was seen (see MarkSeen).
func (b *Groups) SeeAll(path, by string) {
	for _, i := range b.paths[path] {
		b.seen(i, by)
	}
}
