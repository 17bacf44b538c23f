package host

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/writewatch/writewatch/internal/gobin"
	"github.com/writewatch/writewatch/internal/pathwalk"
)

// Live answers from this machine, now.
type Live struct {
	// Source names a followed Go test's source (tracer.GoTestSource);
	// nil: unknown.
	Source func(tgid uint32, pc uint64, name string) (string, int)
	// Funcs lists a followed Go test binary's test functions
	// (tracer.GoTestFuncs); nil: unknown.
	Funcs func(tgid uint32) ([]gobin.TestFunc, error)
	// Mounts counts the tree's calls that change mounts
	// (tracer.MountCalls); nil: unknown, never the count of a record.
	Mounts func() uint32
	// Root, when set, is a path of writewatch's to the root COMMAND's
	// paths start from (a sandbox's, sandbox.Sandbox.Root): every path
	// asked about is COMMAND's, looked up under Root.
	Root string
}

// Resolve walks path now. Links and Gone are watched when o asks for
// them (o.Links not nil).
func (l Live) Resolve(path string, o pathwalk.Options) Walk {
	var w Walk
	if o.Links != nil { // asked to watch the symlinks followed
		o.Links, o.Gone = &w.Links, &w.Gone
	}
	if l.Root != "" && o.Root == "" {
		o.Root = l.Root
		if o.Dir != "" {
			o.Dir = l.Root + o.Dir
		}
		w.Path, w.Err = pathwalk.Resolve(path, o)
		if rest, ok := strings.CutPrefix(w.Path, l.Root); ok {
			w.Path = "/" + strings.TrimPrefix(rest, "/")
		}
		return w
	}
	w.Path, w.Err = pathwalk.Resolve(path, o)
	return w
}

// Stat stats path, following its last symlink.
func (l Live) Stat(path string) (File, error) {
	var st unix.Stat_t
	if err := unix.Stat(l.Root+path, &st); err != nil {
		return File{}, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	return fileOf(&st), nil
}

// Lstat stats path itself.
func (l Live) Lstat(path string) (File, error) {
	var st unix.Stat_t
	if err := unix.Lstat(l.Root+path, &st); err != nil {
		return File{}, &fs.PathError{Op: "lstat", Path: path, Err: err}
	}
	return fileOf(&st), nil
}

// Filesystem statfs and stats path.
func (l Live) Filesystem(path string) (FS, error) {
	var sf unix.Statfs_t
	var st unix.Stat_t
	if err := unix.Statfs(l.Root+path, &sf); err != nil {
		return FS{}, &fs.PathError{Op: "statfs", Path: path, Err: err}
	}
	if err := unix.Stat(l.Root+path, &st); err != nil {
		return FS{}, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	return FS{Type: int64(sf.Type), Dev: st.Dev}, nil
}

// MountCalls asks Mounts.
func (l Live) MountCalls() uint32 {
	if l.Mounts == nil {
		return ^uint32(0)
	}
	return l.Mounts()
}

func fileOf(st *unix.Stat_t) File {
	return File{Dev: st.Dev, Ino: st.Ino, Mode: st.Mode, Nlink: uint64(st.Nlink), Ctime: time.Unix(st.Ctim.Unix()),
		Uid: st.Uid, Gid: st.Gid, Mtime: time.Unix(st.Mtim.Unix())}
}

// Descriptor reads descriptor fd's link. The descriptor may have been
// closed and its number reused: it counts only while it is the file
// linkPath names.
func (l Live) Descriptor(fd, linkPath string) Held {
	target, err := os.Readlink(fd)
	if err != nil {
		return Held{}
	}
	var held, linked unix.Stat_t
	if unix.Stat(fd, &held) == nil && unix.Lstat(l.Root+linkPath, &linked) == nil &&
		(held.Dev != linked.Dev || held.Ino != linked.Ino) {
		return Held{}
	}
	return Held{Target: target, OK: true}
}

// maxVisits bounds the entries OtherNames reads.
const maxVisits = 100_000

// errFound stops a walk.
var errFound = errors.New("found")

// OtherNames walks the roots, in order, for the file's other names.
func (l Live) OtherNames(dev, ino uint64, known string, want int, roots []string) []string {
	var (
		names  []string
		visits int
	)
	seen := map[string]bool{}
	for _, root := range roots {
		if root == "" || seen[root] {
			continue
		}
		seen[root] = true
		filepath.WalkDir(l.Root+root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			p = strings.TrimPrefix(p, l.Root)
			if visits++; visits > maxVisits {
				return filepath.SkipAll
			}
			var st unix.Stat_t
			if unix.Lstat(l.Root+p, &st) != nil || st.Dev != dev {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if st.Ino == ino && !d.IsDir() && p != known && !slices.Contains(names, p) {
				names = append(names, p)
				if len(names) >= want {
					return errFound
				}
			}
			return nil
		})
		if len(names) >= want {
			break
		}
	}
	return names
}

// ParentOf reads process pid's parent from /proc/PID/stat.
func (Live) ParentOf(pid int32) (int32, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(int(pid)) + "/stat")
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	fields := bytes.Fields(data[i+1:])
	if len(fields) < 2 {
		return 0, fmt.Errorf("/proc/%d/stat: short", pid)
	}
	ppid, err := strconv.Atoi(string(fields[1]))
	return int32(ppid), err
}

// GoTestSource asks Source.
func (l Live) GoTestSource(tgid uint32, pc uint64, name string) (string, int) {
	if l.Source == nil {
		return "", 0
	}
	return l.Source(tgid, pc, name)
}

// GoTestFuncs asks Funcs.
func (l Live) GoTestFuncs(tgid uint32) ([]gobin.TestFunc, error) {
	if l.Funcs == nil {
		return nil, errors.New("the test functions of a Go test binary are not known here")
	}
	return l.Funcs(tgid)
}
