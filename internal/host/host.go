// Package host is what a run's session asks of the machine the run
// happened on, besides the run's own records: where a path leads now,
// what a file is at the end of the run, which file a process holds, who
// a process's parent is, where a Go test's source is. A live run asks
// the machine (Live); a recorded run keeps every answer (Recorder), so
// that a replay of its items gets the same answers (Replay) on any
// machine, with no root and no kernel.
package host

import (
	"time"

	"github.com/writewatch/writewatch/internal/gobin"
	"github.com/writewatch/writewatch/internal/pathwalk"
)

// File is what a stat of a path says, as far as the session looks.
type File struct {
	Dev, Ino uint64
	Mode     uint32
	Nlink    uint64
	Ctime    time.Time
	// Uid, Gid and Mtime are the owner and the modification time, for
	// severity: whether a run set metadata back as it found it.
	Uid, Gid uint32    `json:",omitempty"`
	Mtime    time.Time `json:",omitzero"`
}

// IsDir says the file is a directory.
func (f *File) IsDir() bool { return f.Mode&0o170000 == 0o040000 }

// Walk is the answer of Resolve: the path reached, the latest change of
// the symlinks the walk followed, and whether it could not follow the
// path any more (see pathwalk.Options.Links and Gone).
type Walk struct {
	Path  string
	Links time.Time
	Gone  bool
	Err   error
}

// FS is what statfs and stat say of the filesystem a path lies on: its
// type (statfs's f_type, the filesystem's magic number) and its device.
type FS struct {
	Type int64
	Dev  uint64
}

// Held is what a process's descriptor link shows: the file it names, when
// the descriptor still is the file a hard link was made from.
type Held struct {
	Target string
	OK     bool
}

// Host answers the session's questions about the machine.
type Host interface {
	// Resolve walks path as pathwalk.Resolve does for o (its Links and
	// Gone outputs are returned, not written).
	Resolve(path string, o pathwalk.Options) Walk
	// Stat and Lstat stat a path, following its last symlink or not.
	Stat(path string) (File, error)
	Lstat(path string) (File, error)
	// Descriptor reads the link of descriptor fd (/proc/PID/fd/N), when
	// it is still the file linkPath names.
	Descriptor(fd, linkPath string) Held
	// OtherNames looks for up to want names of file (dev, ino), other
	// than known, under the roots, on the same filesystem.
	OtherNames(dev, ino uint64, known string, want int, roots []string) []string
	// Filesystem says which filesystem path lies on (its last symlink
	// followed).
	Filesystem(path string) (FS, error)
	// MountCalls is the tree's count of calls that change mounts so far
	// (tracer.Tracer.MountCalls).
	MountCalls() uint32
	// ParentOf is process pid's parent in writewatch's PID namespace.
	ParentOf(pid int32) (int32, error)
	// GoTestSource names the source file and line of the function at
	// pc (or of the test named name) in followed Go test binary tgid.
	GoTestSource(tgid uint32, pc uint64, name string) (string, int)
	// GoTestFuncs lists the Test and Fuzz functions of followed Go test
	// binary tgid (gobin.Layout.TestFuncs), or says why it cannot.
	GoTestFuncs(tgid uint32) ([]gobin.TestFunc, error)
}
