package judge

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// maxLinks is how many symlinks one lookup follows, the kernel's
// MAXSYMLINKS.
const maxLinks = 40

// resolveParents resolves the directories above the last component of an
// absolute path the way the kernel looked them up: one component at a
// time, a symlink followed where it stands, and a ".." taken from the
// directory reached so far, not from the text before it (so that
// tests/x/../config.toml, where tests/x links to ".", is the project's
// config.toml, not tests/config.toml). The last component is the entry
// the call acted on and is not followed, unless it is "." or "..".
//
// The walk reads the filesystem as it is now. Where a component no
// longer exists, the rest of the path is cleaned as text: the best
// guess left. Paths under /proc are cleaned as text too, since
// /proc/self there would name writewatch.
func resolveParents(p string) string {
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "/proc/") {
		return filepath.Clean(p)
	}
	trimmed := strings.TrimRight(p, "/")
	if trimmed == "" {
		return "/"
	}
	i := strings.LastIndexByte(trimmed, '/')
	dir, base := trimmed[:i], trimmed[i+1:]
	if base == "." || base == ".." {
		return walk(trimmed)
	}
	d := walk(dir)
	if d == "/" {
		return "/" + base
	}
	return d + "/" + base
}

// walk resolves every component of the absolute path p, symlinks
// included, and returns a clean absolute path.
func walk(p string) string {
	dest := "" // the directory reached so far; "" is /
	rest := p
	links := 0
	for rest != "" {
		var comp string
		rest = strings.TrimLeft(rest, "/")
		comp, rest, _ = strings.Cut(rest, "/")
		switch comp {
		case "", ".":
			continue
		case "..":
			dest = dest[:max(strings.LastIndexByte(dest, '/'), 0)]
			continue
		}
		next := dest + "/" + comp
		fi, err := os.Lstat(next)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			if err != nil {
				// Gone (or never there): the rest as text.
				return filepath.Clean(next + "/" + rest)
			}
			dest = next
			continue
		}
		target, err := os.Readlink(next)
		if links++; err != nil || links > maxLinks {
			return filepath.Clean(next + "/" + rest)
		}
		if strings.HasPrefix(target, "/") {
			dest = ""
		}
		rest = target + "/" + rest
	}
	if dest == "" {
		return "/"
	}
	return dest
}
