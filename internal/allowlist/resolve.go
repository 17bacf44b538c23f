package allowlist

import (
	"io/fs"
	"path/filepath"
)

type realPath struct {
	path string
	ok   bool
}

// real returns path with its symbolic links resolved, as EvalSymlinks
// does, and whether it exists. Each directory above path is resolved once
// and remembered, and a directory in which many names are looked up is
// listed once (see entryType), so a config of 100,000 entries in a few
// directories costs about as many system calls as it has directories.
func (b *builder) real(path string) (string, bool) {
	return b.realIn(path, false)
}

func (b *builder) realIn(path string, remember bool) (string, bool) {
	if path == "/" {
		return "/", true
	}
	if r, ok := b.realCache[path]; ok {
		return r.path, r.ok
	}
	var r realPath
	if parent, ok := b.realIn(filepath.Dir(path), true); ok {
		name := filepath.Base(path)
		cand := filepath.Join(parent, name)
		if typ, ok := b.entryType(parent, name); ok {
			if typ&fs.ModeSymlink == 0 {
				r = realPath{cand, true}
			} else if s, err := b.fsys.evalSymlinks(cand); err == nil {
				r = realPath{s, true}
			}
		}
	}
	if remember {
		if b.realCache == nil {
			b.realCache = map[string]realPath{}
		}
		b.realCache[path] = r
	}
	return r.path, r.ok
}

// listAfter is how many names looked up in one directory make it list the
// directory instead of looking up each of the rest on its own.
const listAfter = 16

// A listing is what entryType knows of a directory.
type listing struct {
	lookups int
	listed  bool
	types   map[string]fs.FileMode // nil when not listed or not readable
}

// entryType returns the type bits of the entry name in the directory dir,
// which has no symbolic links, and whether it exists.
func (b *builder) entryType(dir, name string) (fs.FileMode, bool) {
	if b.fsys.readDir != nil {
		if b.listings == nil {
			b.listings = map[string]*listing{}
		}
		l := b.listings[dir]
		if l == nil {
			l = &listing{}
			b.listings[dir] = l
		}
		l.lookups++
		if !l.listed && l.lookups > listAfter {
			l.listed = true
			if des, err := b.fsys.readDir(dir); err == nil {
				l.types = make(map[string]fs.FileMode, len(des))
				for _, de := range des {
					l.types[de.Name()] = de.Type()
				}
			}
		}
		if l.types != nil {
			typ, ok := l.types[name]
			return typ, ok
		}
	}
	fi, err := b.fsys.lstat(filepath.Join(dir, name))
	if err != nil {
		return 0, false
	}
	return fi.Mode().Type(), true
}
