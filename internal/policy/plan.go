package policy

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/writewatch/writewatch/internal/allowlist"
	"github.com/writewatch/writewatch/internal/pathwalk"
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
	link bool // Path is a symbolic link (to the granted directory or file)
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
	TooMany                  // more grants than the kernel is given: the rest is refused
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
	inodes  *inodes // what planning looked up, for Marks
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

// allowRule is a compiled allow entry, or a literal path (pat nil).
type allowRule struct {
	entry *allowlist.Entry
	pat   *allowlist.Pattern
}

// match reports whether the rule matches path or a directory above it.
func (a allowRule) match(path string) bool {
	if a.pat != nil {
		return a.pat.Match(path)
	}
	return pathwalk.Within(path, a.entry.Pattern)
}

// plainPath reports whether an entry's pattern names one path as it is:
// no wildcard, nothing escaped. Such entries, the bulk of a big list,
// need no compiling.
func plainPath(pattern string) bool {
	return strings.HasPrefix(pattern, "/") && !strings.ContainsAny(pattern, `*?[\`)
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
	var literals []string
	for i := range entries {
		if e := &entries[i]; e.Kind == allowlist.Allow && plainPath(e.Pattern) {
			literals = append(literals, e.Pattern)
		} else if p := literalPrefix(e.Pattern); e.Kind == allowlist.Allow && p != "/" {
			literals = append(literals, p)
		}
	}
	pl.plan.inodes = newInodes(literals)
	for i := range entries {
		e := &entries[i]
		var p *allowlist.Pattern
		if e.Kind == allowlist.Deny || !plainPath(e.Pattern) {
			var err error
			if p, err = allowlist.Compile(e.Pattern); err != nil {
				return nil, err
			}
		}
		if e.Kind == allowlist.Deny {
			pl.allDenies = append(pl.allDenies, denyRule{e, p})
		} else {
			pl.allows = append(pl.allows, allowRule{e, p})
		}
	}
	// The directories made for COMMAND first: they are few, and the
	// run needs them.
	for _, dir := range dirs {
		pl.plan.Dirs = append(pl.plan.Dirs, pl.dir(filepath.Clean(dir)))
	}
	allows := pl.allows
	for i := range entries {
		e := &entries[i]
		ep := EntryPlan{Entry: *e, How: DenyExact}
		if e.Kind == allowlist.Allow {
			a := allows[0]
			allows = allows[1:]
			pl.against(e)
			before := len(pl.plan.Grants)
			if a.pat == nil {
				ep.How = pl.allowPath(filepath.Clean(e.Pattern))
			} else {
				ep.How = pl.allow(a.pat)
			}
			ep.Grants = len(pl.plan.Grants) - before
		}
		pl.plan.Entries = append(pl.plan.Entries, ep)
	}
	pl.plan.limit(maxGrants)
	for d := range pl.denied {
		pl.plan.Denied = append(pl.plan.Denied, d)
	}
	slices.Sort(pl.plan.Denied)
	return pl.plan, nil
}

// maxGrants bounds the grants of a plan: each is a Landlock rule, an
// inode mark and an entry of the kernel's allowed-prefix trie (a few
// hundred bytes of kernel memory each).
var maxGrants = 1 << 18

// limit keeps the first max grants: the entries whose grants go beyond
// are enforced as TooMany, refused.
func (p *Plan) limit(limit int) {
	if len(p.Grants) <= limit {
		return
	}
	n := 0
	for _, d := range p.Dirs {
		n += d.Grants
	}
	for i := range p.Entries {
		e := &p.Entries[i]
		if n+e.Grants > limit {
			e.How, e.Grants = TooMany, max(0, limit-n)
		}
		n += e.Grants
	}
	p.Grants = p.Grants[:limit]
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
	in, ok := pl.plan.inodes.stat(dir)
	if !ok {
		return dp
	}
	for _, a := range pl.allows {
		if !a.match(dir) {
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
		pl.grant(dir, in.Dir, in.Link)
		dp.By, dp.How, dp.Grants = a.entry, pl.how, len(pl.plan.Grants)-before
		return dp
	}
	dp.How = Inexpressible
	return dp
}

// allowPath grants the path an entry names as it is.
func (pl *planner) allowPath(path string) How {
	pl.how = Exact
	in, ok := pl.plan.inodes.stat(path)
	if !ok {
		return Missing
	}
	pl.grant(path, in.Dir, in.Link)
	return pl.how
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
	in, ok := pl.plan.inodes.stat(prefix)
	if !ok {
		return Missing
	}
	if p.Match(prefix) {
		pl.grant(prefix, in.Dir, in.Link)
		return pl.how
	}
	// A glob: look for what matches it now.
	pl.how = Expanded
	if in.Dir {
		pl.expand(p, prefix)
	}
	return pl.how
}

// expand grants the existing paths under dir that p matches.
func (pl *planner) expand(p *allowlist.Pattern, dir string) {
	for _, child := range pl.children(dir) {
		if p.Match(child.path) {
			pl.grant(child.path, child.dir, false)
		} else if child.dir && p.CanMatchBelow(child.path) {
			pl.expand(p, child.path)
		}
	}
}

// grant grants path, or, when a deny rule may name something under it,
// what lies under it around the denied paths.
func (pl *planner) grant(path string, dir, link bool) {
	for _, d := range pl.denies {
		if d.Match(path) {
			pl.denied[path] = true
			pl.narrow()
			return
		}
	}
	below := false
	if dir {
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
			pl.plan.Grants = append(pl.plan.Grants, Grant{Path: path, Dir: dir, link: link})
		}
		return
	}
	pl.narrow()
	for _, child := range pl.children(path) {
		pl.grant(child.path, child.dir, false)
	}
}

func (pl *planner) narrow() {
	if pl.how == Exact {
		pl.how = Narrowed
	}
}

type child struct {
	path string
	dir  bool
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
		out = append(out, child{filepath.Join(dir, de.Name()), de.IsDir()})
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
// Each directory's symbolic links are resolved once, and a path is judged
// in a look-up per directory above it, however many grants there are.
func (p *Plan) Allows() func(path string) bool {
	exact := make(map[string]bool, len(p.Grants))
	under := map[string]bool{}
	add := func(path string, dir bool) {
		exact[path] = true
		if dir {
			under[path] = true
		}
	}
	reals := realDirs{}
	for _, g := range p.Grants {
		clean := filepath.Clean(g.Path)
		add(clean, g.Dir)
		if g.link {
			if real, err := filepath.EvalSymlinks(clean); err == nil {
				add(real, g.Dir)
			}
		} else if clean != "/" {
			add(filepath.Join(reals.real(filepath.Dir(clean)), filepath.Base(clean)), g.Dir)
		}
	}
	return func(path string) bool {
		if exact[path] {
			return true
		}
		for dir := filepath.Dir(path); ; dir = filepath.Dir(dir) {
			if under[dir] {
				return true
			}
			if dir == "/" || dir == "." {
				return false
			}
		}
	}
}

// realDirs resolves the symbolic links of directories, each directory
// once, one lstat(2) for each: a parent resolved already is not walked
// again.
type realDirs map[string]string

// real returns dir, absolute and clean, with its symbolic links
// resolved; what cannot be resolved is kept as it is.
func (r realDirs) real(dir string) string {
	if dir == "/" {
		return dir
	}
	if real, ok := r[dir]; ok {
		return real
	}
	real := filepath.Join(r.real(filepath.Dir(dir)), filepath.Base(dir))
	if fi, err := os.Lstat(real); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		if s, err := filepath.EvalSymlinks(real); err == nil {
			real = s
		}
	}
	r[dir] = real
	return real
}
