package policy

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/writewatch/writewatch/internal/allowlist"
)

// MaxVisits bounds the files and directories looked at while planning, so
// that a deny rule over a big tree cannot make start-up slow. What is not
// looked at is not granted.
const MaxVisits = 20000

// Grant is one existing file or directory under which (or on which, for a
// file) writes are granted.
type Grant struct {
	Path string
	Dir  bool
}

// How says how one entry is enforced.
type How int

const (
	Exact         How = iota // enforced as written
	Narrowed                 // granted around the deny rules inside it; new names next to them are refused
	Expanded                 // a glob: only the paths matching at start are granted
	Missing                  // nothing exists there at start: writes there are refused
	Inexpressible            // no literal directory to start from: writes it allows are refused
	Truncated                // too many paths to look at: the rest is refused
	DenyExact                // a deny entry: nothing it names is granted
)

// EntryPlan is the enforcement of one allowlist entry.
type EntryPlan struct {
	Entry  allowlist.Entry
	How    How
	Grants int // grants this entry added
}

// Plan is the enforceable form of an allowlist.
type Plan struct {
	Grants []Grant
	// Denied are existing paths a deny entry names, met while planning:
	// they are marked in the kernel too, so a hard link into a granted
	// directory does not make them writable.
	Denied  []string
	Entries []EntryPlan
	// Dirs are the directories made for COMMAND (see Dirs) and how each
	// is granted.
	Dirs []DirPlan
}

// DirPlan is the enforcement of one directory made for COMMAND.
type DirPlan struct {
	Path string
	// By is the allow entry that allows it; nil when none does, and
	// nothing is granted.
	By     *allowlist.Entry
	How    How
	Grants int
}

type planner struct {
	allows    []allowRule
	allDenies []denyRule
	denies    []*allowlist.Pattern // the deny rules that win over the allow entry being planned
	granted   map[string]bool
	denied    map[string]bool
	visits    int
	plan      *Plan
	how       How
}

// denyRule is a compiled deny entry.
type denyRule struct {
	entry *allowlist.Entry
	pat   *allowlist.Pattern
}

// allowRule is a compiled allow entry.
type allowRule struct {
	entry *allowlist.Entry
	pat   *allowlist.Pattern
}

// NewPlan computes the grants for entries (as allowlist.List.Entries
// returns them), and for dirs, existing directories made for COMMAND
// (Dirs.Grants), each granted as far as the allowlist allows it.
//
// An allow entry is granted around the deny entries that win over it
// (allowlist.Entry.Overrides): every deny entry, except the one that
// takes the project out of the defaults covering it, which narrows only
// those defaults. So a project under /tmp is refused, while its own
// entries (tests/**) are granted as written.
func NewPlan(entries []allowlist.Entry, dirs ...string) (*Plan, error) {
	pl := &planner{granted: map[string]bool{}, denied: map[string]bool{}, plan: &Plan{}}
	for i := range entries {
		e := &entries[i]
		if e.Kind != allowlist.Deny {
			continue
		}
		p, err := allowlist.Compile(e.Pattern)
		if err != nil {
			return nil, err
		}
		pl.allDenies = append(pl.allDenies, denyRule{e, p})
	}
	for i := range entries {
		e := &entries[i]
		ep := EntryPlan{Entry: *e, How: DenyExact}
		if e.Kind == allowlist.Allow {
			p, err := allowlist.Compile(e.Pattern)
			if err != nil {
				return nil, err
			}
			pl.allows = append(pl.allows, allowRule{e, p})
			pl.against(e)
			before := len(pl.plan.Grants)
			ep.How = pl.allow(p)
			ep.Grants = len(pl.plan.Grants) - before
		}
		pl.plan.Entries = append(pl.plan.Entries, ep)
	}
	for _, dir := range dirs {
		pl.plan.Dirs = append(pl.plan.Dirs, pl.dir(filepath.Clean(dir)))
	}
	for d := range pl.denied {
		pl.plan.Denied = append(pl.plan.Denied, d)
	}
	slices.Sort(pl.plan.Denied)
	return pl.plan, nil
}

// against sets the deny rules that win over allow entry a.
func (pl *planner) against(a *allowlist.Entry) {
	pl.denies = pl.denies[:0]
	for _, d := range pl.allDenies {
		if d.entry.Overrides(a) {
			pl.denies = append(pl.denies, d.pat)
		}
	}
}

// dir grants an existing directory made for COMMAND under the first
// allow entry that allows it, around the deny rules that win over that
// entry.
func (pl *planner) dir(dir string) DirPlan {
	dp := DirPlan{Path: dir, How: Missing}
	fi, err := os.Stat(dir)
	if err != nil {
		return dp
	}
	for _, a := range pl.allows {
		if !a.pat.Match(dir) {
			continue
		}
		pl.against(a.entry)
		denied := false
		for _, d := range pl.denies {
			if d.Match(dir) {
				denied = true
				break
			}
		}
		if denied {
			continue
		}
		pl.how = Exact
		before := len(pl.plan.Grants)
		pl.grant(dir, fi)
		dp.By, dp.How, dp.Grants = a.entry, pl.how, len(pl.plan.Grants)-before
		return dp
	}
	dp.How = Inexpressible
	return dp
}

// allow grants what one allow pattern names.
func (pl *planner) allow(p *allowlist.Pattern) How {
	prefix := p.LiteralPrefix()
	pl.how = Exact
	if p.String() == "/" {
		prefix = "/"
	} else if prefix == "" {
		return Inexpressible
	}
	fi, err := os.Stat(prefix)
	if err != nil {
		return Missing
	}
	if p.Match(prefix) {
		pl.grant(prefix, fi)
		return pl.how
	}
	// A glob: look for what matches it now.
	pl.how = Expanded
	pl.expand(p, prefix, fi)
	return pl.how
}

// expand grants the existing paths under dir that p matches.
func (pl *planner) expand(p *allowlist.Pattern, dir string, fi fs.FileInfo) {
	if !fi.IsDir() {
		return
	}
	for _, child := range pl.children(dir) {
		if p.Match(child.path) {
			pl.grant(child.path, child.info)
		} else if child.info.IsDir() && p.CanMatchBelow(child.path) {
			pl.expand(p, child.path, child.info)
		}
	}
}

// grant grants path, or, when a deny rule may name something under it,
// what lies under it around the denied paths.
func (pl *planner) grant(path string, fi fs.FileInfo) {
	for _, d := range pl.denies {
		if d.Match(path) {
			pl.denied[path] = true
			pl.narrow()
			return
		}
	}
	below := false
	if fi.IsDir() {
		for _, d := range pl.denies {
			if d.CanMatchBelow(path) {
				below = true
				break
			}
		}
	}
	if !below {
		if !pl.granted[path] {
			pl.granted[path] = true
			pl.plan.Grants = append(pl.plan.Grants, Grant{Path: path, Dir: fi.IsDir()})
		}
		return
	}
	pl.narrow()
	for _, child := range pl.children(path) {
		pl.grant(child.path, child.info)
	}
}

func (pl *planner) narrow() {
	if pl.how == Exact {
		pl.how = Narrowed
	}
}

type child struct {
	path string
	info fs.FileInfo
}

// children lists the entries of dir, symbolic links left out: a write
// through a link is judged where it lands.
func (pl *planner) children(dir string) []child {
	des, _ := os.ReadDir(dir) // what could be read; the rest is not granted
	var out []child
	for _, de := range des {
		pl.visits++
		if pl.visits > MaxVisits {
			pl.how = Truncated
			return out
		}
		if de.Type()&fs.ModeSymlink != 0 {
			continue
		}
		info, err := de.Info()
		if err != nil {
			continue
		}
		out = append(out, child{filepath.Join(dir, de.Name()), info})
	}
	return out
}

// Prefixes returns the grants as strings for the kernel's string check of
// absolute paths: a directory as "DIR/" (everything under it) and "DIR"
// (itself), a file as its path. A prefix longer than max bytes is left
// out (its writes are then refused).
func (p *Plan) Prefixes(max int) (dirs, exact []string) {
	for _, g := range p.Grants {
		if len(g.Path)+1 > max {
			continue
		}
		exact = append(exact, g.Path)
		if g.Dir {
			dirs = append(dirs, strings.TrimSuffix(g.Path, "/")+"/")
		}
	}
	return dirs, exact
}

// Allows returns a judge of clean absolute paths, symlinks resolved: a
// path is allowed when it is a grant or lies under a directory grant.
// Grants are matched as written and with their own symlinks resolved.
func (p *Plan) Allows() func(path string) bool {
	type grant struct {
		path string
		dir  bool
	}
	var gs []grant
	for _, g := range p.Grants {
		clean := filepath.Clean(g.Path)
		gs = append(gs, grant{clean, g.Dir})
		if real, err := filepath.EvalSymlinks(clean); err == nil && real != clean {
			gs = append(gs, grant{real, g.Dir})
		}
	}
	return func(path string) bool {
		for _, g := range gs {
			if path == g.path {
				return true
			}
			if g.dir && (g.path == "/" || strings.HasPrefix(path, g.path) && path[len(g.path)] == '/') {
				return true
			}
		}
		return false
	}
}
