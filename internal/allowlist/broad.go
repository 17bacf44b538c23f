package allowlist

import "path/filepath"

// broadGuard knows the directories an allow entry may cover only when it
// is marked broad: /, the home directory and the directories above the
// project, each as written and with its symbolic links resolved.
type broadGuard struct {
	homes   []string
	project string
	above   []string // directories above the project, from / down
}

func (b *builder) broadGuard(project, home string) *broadGuard {
	g := &broadGuard{project: project}
	seen := map[string]bool{}
	both := func(dir string) []string {
		out := []string{dir}
		if real, err := b.fsys.evalSymlinks(dir); err == nil && filepath.IsAbs(real) && real != dir {
			out = append(out, real)
		}
		return out
	}
	if filepath.IsAbs(home) {
		g.homes = both(filepath.Clean(home))
	}
	for _, p := range both(project) {
		var above []string
		for dir := filepath.Dir(p); ; dir = filepath.Dir(dir) {
			above = append(above, dir)
			if dir == "/" {
				break
			}
		}
		for i := len(above) - 1; i >= 0; i-- {
			if !seen[above[i]] {
				seen[above[i]] = true
				g.above = append(g.above, above[i])
			}
		}
	}
	return g
}

// covers returns, when one of pats allows all of /, the home directory or
// a directory above the project, a message that says which; else "".
func (g *broadGuard) covers(pats []*Pattern) string {
	for _, p := range pats {
		if p.Match("/") {
			return "covers / (every path)"
		}
	}
	for _, p := range pats {
		for _, h := range g.homes {
			if p.Match(h) {
				return "covers the home directory " + h
			}
		}
	}
	for _, p := range pats {
		for _, dir := range g.above {
			if p.Match(dir) {
				return "covers " + dir + ", a directory above the project " + g.project
			}
		}
	}
	return ""
}
