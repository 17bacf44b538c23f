package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/writewatch/writewatch/internal/allowlist"
	"github.com/writewatch/writewatch/internal/mountinfo"
)

// How says what becomes of one mount, or one allowed path, in the
// sandbox.
type How int

const (
	// Overlay: a copy-on-write overlay over the real filesystem; what
	// COMMAND writes there stays in the overlay's upper layer.
	Overlay How = iota + 1
	// Real: the real filesystem, bound through: what COMMAND writes
	// there lands (a special filesystem, one mounted read-only, an
	// allowed path).
	Real
)

// Place is one mount of the sandbox's tree, in the order they are made.
type Place struct {
	// Path is where it is, the same in the sandbox as outside.
	Path string
	How  How
	// FSType is the filesystem's type, for the report.
	FSType string
	// Why says why a real filesystem is bound through rather than
	// overlaid.
	Why string
}

// Plan is the sandbox's tree: the mounts COMMAND sees, each overlaid or
// real, in the order they are made (a parent before what is mounted on
// it).
type Plan struct {
	Places []Place
	// Allow is the allowlist; a change in an overlay that it allows is
	// applied to the real filesystem when the run ends.
	Allow *allowlist.List
}

// special are the filesystems that behave in the sandbox as outside:
// bound through, never overlaid.
var special = []string{
	"proc", "sysfs", "devtmpfs", "devpts", "mqueue", "cgroup", "cgroup2", "securityfs", "debugfs",
	"tracefs", "bpf", "configfs", "fusectl", "pstore", "hugetlbfs", "binfmt_misc", "efivarfs",
	"autofs", "nsfs", "rpc_pipefs", "selinuxfs",
}

// specialTrees are the directories whose mounts are bound through, as
// the issue of how COMMAND's system works: /run holds sockets and
// runtime state other processes share.
var specialTrees = []string{"/proc", "/sys", "/dev", "/run"}

// NewPlan plans the sandbox for the allowlist over mounts (this mount
// namespace's, mountinfo.Read). skip is the directory the sandbox's own
// layers are kept in, which the tree leaves out.
func NewPlan(allow *allowlist.List, mounts []mountinfo.Mount, skip string) *Plan {
	p := &Plan{Allow: allow}
	mounts = parentsFirst(mounts)
	for _, m := range mounts {
		if within(m.Point, skip) {
			continue
		}
		p.Places = append(p.Places, place(m))
	}
	p.allowed(mounts, skip)
	return p
}

// place says what becomes of mount m.
func place(m mountinfo.Mount) Place {
	pl := Place{Path: m.Point, How: Overlay, FSType: m.FSType}
	switch {
	case slices.Contains(special, m.FSType):
		pl.How, pl.Why = Real, "a special filesystem"
	case slices.ContainsFunc(specialTrees, func(t string) bool { return within(m.Point, t) }):
		pl.How, pl.Why = Real, "under "+specialTree(m.Point)
	case m.ReadOnly():
		pl.How, pl.Why = Real, "mounted read-only"
	}
	return pl
}

func specialTree(p string) string {
	for _, t := range specialTrees {
		if within(p, t) {
			return t
		}
	}
	return p
}

// allowed adds, after the mounts, the allowed paths that exist and that
// writes may land in for real, each bound through (with the mounts under
// it), then an overlay again on each deny entry's directory inside one.
// What the allowlist allows elsewhere (a glob, a path missing at start)
// goes to an overlay and is applied when the run ends.
func (p *Plan) allowed(mounts []mountinfo.Mount, skip string) {
	if p.Allow == nil {
		return
	}
	entries := p.Allow.Entries()
	var dirs []string
	for _, e := range entries {
		if e.Kind != allowlist.Allow {
			continue
		}
		dir, ok := boundPath(e.Pattern)
		if !ok || !p.overlaid(dir) || slices.ContainsFunc(dirs, func(d string) bool { return within(dir, d) }) {
			continue
		}
		if _, err := os.Lstat(dir); err != nil {
			continue
		}
		if ok, _ := p.Allow.Match(dir); !ok && !strings.HasSuffix(e.Pattern, "/**") {
			continue
		}
		dirs = slices.DeleteFunc(dirs, func(d string) bool { return within(d, dir) })
		dirs = append(dirs, dir)
	}
	slices.Sort(dirs)
	for _, dir := range dirs {
		p.Places = append(p.Places, Place{Path: dir, How: Real, Why: "allowed"})
		for _, m := range mounts {
			if m.Point != dir && within(m.Point, dir) && !within(m.Point, skip) {
				p.Places = append(p.Places, place(m))
			}
		}
		for _, d := range p.deniedIn(entries, dir) {
			p.Places = append(p.Places, Place{Path: d, How: Overlay, Why: "denied inside an allowed path"})
		}
	}
}

// boundPath is the path an allow entry lets COMMAND write for real: a
// literal path, or the directory of "dir/**". ok is false for another
// glob.
func boundPath(pattern string) (string, bool) {
	dir := strings.TrimSuffix(pattern, "/**")
	if strings.ContainsAny(dir, `*?[\`) || dir == "" || dir == "/" {
		return "", false
	}
	return filepath.Clean(dir), true
}

// overlaid says path lies on an overlaid place (it would otherwise be
// real already).
func (p *Plan) overlaid(path string) bool {
	how := How(0)
	for _, pl := range p.Places {
		if within(path, pl.Path) {
			how = pl.How
		}
	}
	return how == Overlay
}

// deniedIn are the existing directories inside dir under which a deny
// entry (or the project's carve-out from a default) may name a path:
// each deny pattern's literal directory, or its nearest existing
// parent, inside dir.
func (p *Plan) deniedIn(entries []allowlist.Entry, dir string) []string {
	var out []string
	for _, e := range entries {
		if e.Kind != allowlist.Deny {
			continue
		}
		lit := literalDir(e.Pattern)
		switch {
		case within(dir, lit):
			// The deny entry names dir itself or a parent: nothing of dir
			// is written for real. Rare: an allow entry inside a deny.
			lit = dir
		case !within(lit, dir):
			continue
		}
		for lit != dir {
			if st, err := os.Lstat(lit); err == nil && st.IsDir() {
				break
			}
			lit = filepath.Dir(lit)
		}
		if !slices.Contains(out, lit) {
			out = append(out, lit)
		}
	}
	slices.Sort(out)
	return out
}

// literalDir is the longest directory of pattern with no glob in it.
func literalDir(pattern string) string {
	i := strings.IndexAny(pattern, `*?[\`)
	if i < 0 {
		return filepath.Clean(pattern)
	}
	return filepath.Dir(pattern[:i] + "x")
}

// within says path is dir or lies under it.
func within(path, dir string) bool {
	if dir == "" {
		return false
	}
	return path == dir || dir == "/" || strings.HasPrefix(path, dir+"/")
}

// parentsFirst orders mounts so that each comes after the one it is
// mounted on (mountinfo need not list them so), keeping their order
// otherwise.
func parentsFirst(mounts []mountinfo.Mount) []mountinfo.Mount {
	byID := map[int]*mountinfo.Mount{}
	for i := range mounts {
		byID[mounts[i].ID] = &mounts[i]
	}
	depth := func(m *mountinfo.Mount) int {
		d := 0
		for seen := 0; seen < len(mounts); seen++ {
			p := byID[m.Parent]
			if p == nil || p == m {
				break
			}
			m, d = p, d+1
		}
		return d
	}
	out := slices.Clone(mounts)
	slices.SortStableFunc(out, func(a, b mountinfo.Mount) int { return depth(&a) - depth(&b) })
	return out
}
