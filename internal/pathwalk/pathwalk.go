// Package pathwalk resolves a path the way the kernel looks it up for a
// process: one component at a time, a symlink followed where it stands
// and before any ".." after it, /proc/self as the caller's, the last
// component followed or not as the call asks, at most 40 symlinks.
// The judge resolves a write record's path with it, the metadata guard
// the path of a call it answers.
package pathwalk

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// MaxLinks is how many symlinks one lookup follows, the kernel's
// MAXSYMLINKS; one more ends the lookup with ELOOP.
const MaxLinks = 40

// Last says what becomes of the last component of a path.
type Last int

const (
	// Entry: the last component is the entry the call acts on, never
	// followed, trailing slashes or not (unlink, rename, mkdir, the new
	// name of a link).
	Entry Last = iota
	// NoFollow: not followed, unless a slash follows it, which makes
	// the kernel follow it (lchown, AT_SYMLINK_NOFOLLOW).
	NoFollow
	// Follow: followed (chmod, setxattr, utimensat without
	// AT_SYMLINK_NOFOLLOW).
	Follow
)

// Options say whose lookup it is and how it ends.
type Options struct {
	// PID and TID are the process and thread the lookup is made for:
	// /proc/self is /proc/PID and /proc/thread-self /proc/PID/task/TID
	// (TID 0 is PID).
	// With PID 0 no caller is known, and the walk stops at the first
	// entry of /proc (whose self would be this process): the rest is
	// cleaned as text, with ErrNoCaller.
	PID, TID int
	// Dir is the absolute directory a relative path starts from: the
	// caller's working directory or the directory of its dirfd.
	Dir  string
	Last Last
	// Root is the caller's root directory, as an absolute path of this
	// process's (chroot): an absolute path, an absolute symlink and a
	// ".." at the top start or stop there. "" or "/" is this process's
	// root. A Dir outside it (a process that left its chroot) is walked
	// from this process's root.
	Root string
	// Links, when not nil, is set to the latest change (ctime: a link
	// is never written, so its making, a rename, a chown) of the
	// symlinks the walk follows, when later than the time it holds; and
	// Gone, when not nil, is set when the walk cannot follow the path any
	// more (a component missing or unreadable). Both tell whether the
	// path still leads where it led when a call followed it (the judge's
	// unseen calls).
	Links *time.Time
	Gone  *bool
}

var (
	// ErrNoCaller: the path went into /proc with no caller to read it
	// for.
	ErrNoCaller = errors.New("a path under /proc, with no caller to read it for")
	// ErrNotFile: the path ends in a descriptor that holds no file (a
	// pipe, a socket, an anonymous inode).
	ErrNotFile = errors.New("a descriptor of no file")
	// ErrRelative: a relative path, with no directory to start from.
	ErrRelative = errors.New("a relative path with no directory to start from")
)

// Resolve returns the clean absolute path p names, resolved as the
// kernel does for the caller in o. It reads the filesystem as it is now.
// Where the walk cannot go on — a component missing (the error of its
// Lstat), more than MaxLinks symlinks (ELOOP), /proc with no caller
// (ErrNoCaller) — it returns the path reached so far with the rest
// cleaned as text, the best guess left, and the error. A descriptor's
// link to no file gives "" and ErrNotFile. The work is bounded: each of
// at most MaxLinks links adds one link's body to the path left to walk.
func Resolve(p string, o Options) (string, error) {
	root := filepath.Clean("/" + o.Root)
	if root == "/" {
		root = ""
	}
	if !strings.HasPrefix(p, "/") {
		if o.Dir == "" || !strings.HasPrefix(o.Dir, "/") {
			return filepath.Clean(p), ErrRelative
		}
		dir := filepath.Clean(o.Dir)
		switch {
		case dir == root:
			dir = ""
		case root != "" && Within(dir, root):
			dir = dir[len(root):]
		default:
			root = ""
		}
		p = dir + "/" + p // not cleaned: ".." comes after symlinks
	}
	dest, host, err := walk(p, o, root)
	if root != "" && dest != "" && !host {
		dest = filepath.Clean(root + "/" + dest)
	}
	return dest, err
}

// walk is Resolve's walk of the absolute path p inside root ("" for
// this process's root): paths are the caller's, under root; the files
// read are root's. host says the path returned is this process's
// already (a descriptor's file outside root).
func walk(p string, o Options, root string) (string, bool, error) {
	if o.TID == 0 {
		o.TID = o.PID
	}
	dest := "" // the directory reached so far; "" is /
	rest := p
	links := 0
	for {
		rest = strings.TrimLeft(rest, "/")
		if rest == "" {
			break
		}
		var comp string
		var slash bool
		comp, rest, slash = strings.Cut(rest, "/")
		switch comp {
		case ".":
			continue
		case "..":
			dest = dest[:max(strings.LastIndexByte(dest, '/'), 0)]
			continue
		}
		next, err := entryPath(dest, comp, o)
		if err != nil {
			return filepath.Clean(next + "/" + rest), false, err
		}
		if lastUnfollowed(rest, slash, o.Last) {
			dest = next
			break
		}
		fi, err := os.Lstat(root + next)
		if err != nil {
			o.unsure()
			return filepath.Clean(next + "/" + rest), false, err
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			dest = next
			continue
		}
		o.linkChanged(fi, next)
		if links++; links > MaxLinks {
			return filepath.Clean(next + "/" + rest), false, &os.PathError{Op: "lookup", Path: p, Err: syscall.ELOOP}
		}
		target, err := os.Readlink(root + next)
		if err != nil {
			o.unsure()
			return filepath.Clean(next + "/" + rest), false, err
		}
		if strings.HasPrefix(next, "/proc/") {
			var host, ok bool
			target, host, ok = descriptorTarget(target, root)
			if !ok {
				return "", false, ErrNotFile
			}
			if host {
				return filepath.Clean(target + "/" + rest), true, nil
			}
		}
		if strings.HasPrefix(target, "/") {
			dest = ""
		}
		// A slash after the body: its last component is followed as
		// the link was.
		rest = target + "/" + rest
	}
	if dest == "" {
		return "/", false, nil
	}
	return dest, false, nil
}

// entryPath is the path of comp in directory dest. In /proc, self and
// thread-self are the caller's, which with no caller known is
// ErrNoCaller.
func entryPath(dest, comp string, o Options) (string, error) {
	next := dest + "/" + comp
	if dest != "/proc" {
		return next, nil
	}
	if o.PID == 0 {
		return next, ErrNoCaller
	}
	switch comp {
	case "self":
		next = "/proc/" + strconv.Itoa(o.PID)
	case "thread-self":
		next = "/proc/" + strconv.Itoa(o.PID) + "/task/" + strconv.Itoa(o.TID)
	}
	return next, nil
}

// lastUnfollowed reports whether the component cut before rest (and
// slash, whether a slash came after it) is the path's last, to be taken
// as it is: the entry the call acts on, or a link not followed.
func lastUnfollowed(rest string, slash bool, last Last) bool {
	return strings.TrimLeft(rest, "/") == "" && (last == Entry || last == NoFollow && !slash)
}

// linkChanged moves Links up to the change time of the symlink fi, at
// next, when later. /proc makes its entries when they are looked up:
// theirs is left out.
func (o Options) linkChanged(fi os.FileInfo, next string) {
	if o.Links == nil || strings.HasPrefix(next, "/proc/") {
		return
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		if c := time.Unix(st.Ctim.Sec, st.Ctim.Nsec); c.After(*o.Links) {
			*o.Links = c
		}
	}
}

// descriptorTarget reads the target of a link under /proc, read by this
// process: a path of its own root. It is returned under root, or with
// host when outside it; false for a descriptor of no file.
func descriptorTarget(target, root string) (string, bool, bool) {
	target, ok := Descriptor(target)
	if !ok {
		return "", false, false
	}
	if root != "" && strings.HasPrefix(target, "/") {
		if !Within(target, root) {
			return target, true, true
		}
		target = "/" + strings.TrimPrefix(target, root)
	}
	return target, false, true
}

// unsure sets Gone: the walk could not follow the path.
func (o Options) unsure() {
	if o.Gone != nil {
		*o.Gone = true
	}
}

// Descriptor reads the target of a link under /proc (/proc/PID/fd/N,
// cwd, exe): false for a descriptor of no file (pipe:[…], socket:[…],
// anon_inode:…); otherwise the target, without the " (deleted)" of a
// file removed since, and true.
func Descriptor(target string) (string, bool) {
	if !strings.HasPrefix(target, "/") && strings.Contains(target, ":") {
		return "", false
	}
	return strings.TrimSuffix(target, " (deleted)"), true
}

// Within reports whether path is dir or lies below it: both clean and
// absolute, "/" above every path. One home for the question, which the
// allowlist's rules and marks, the report's suggestions and the witness
// ask too.
func Within(path, dir string) bool {
	return strings.HasPrefix(path, dir) && (len(path) == len(dir) || dir == "/" || path[len(dir)] == '/')
}
