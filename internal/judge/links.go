package judge

import (
	"strings"

	"golang.org/x/sys/unix"

	"github.com/writewatch/writewatch/internal/ops"
	"github.com/writewatch/writewatch/report"
	"github.com/writewatch/writewatch/tracer"
)

// A hard link changes nothing of the file linked: not its bytes, not its
// mode. What it makes possible is a write of that file through the new
// name, which may lie where the allowlist allows writes (git clone of a
// local repository, cp -al, rsync --link-dest, pip's and Go's caches all
// link files they never write). So a link from outside the allowlist is
// not reported; the file it linked is remembered, by its identity, and a
// later write of that file by any name is judged as a write of the name
// it was linked from too, with the name used as the requested path.
//
// The kernel sends the write of a file with more than one link even
// where its marks allow the name it was opened by (bpf/lib/paths.h,
// shared_file), so that the judge sees it.

// fileKey is a file's identity as the kernel's records name it: its
// device in the kernel's encoding (major << 20 | minor) and its inode.
type fileKey struct {
	dev uint32
	ino uint64
}

// keyOf is the identity of a file stat named with device dev.
func keyOf(dev, ino uint64) fileKey {
	return fileKey{dev: unix.Major(dev)<<20 | unix.Minor(dev), ino: ino}
}

// linkedFrom takes the verdicts of a hard link: the file linked, when it
// lies outside the allowlist, is remembered rather than reported, once
// its identity is known. It stays a verdict when enforcement acted on
// the call (the refusal is its), when its path was cut, or when neither
// it nor the new name can be found any more. A link that failed linked
// nothing.
func (j *Judge) linkedFrom(ev *tracer.Event, paths []Verdict) []Verdict {
	if ev.Action != 0 || len(paths) == 0 || paths[0].Role != report.RoleOld {
		return paths
	}
	old := &paths[0]
	if old.Truncated || j.allow.Allowed(old.Path) {
		return paths
	}
	if ev.Ret < 0 && !ev.ViaIOUring {
		return dropFirst(paths)
	}
	keys := j.linkedKeys(ev, paths)
	if len(keys) == 0 {
		return paths
	}
	if j.linked == nil {
		j.linked = map[fileKey]string{}
	}
	for _, k := range keys {
		if _, ok := j.linked[k]; !ok {
			j.linked[k] = strings.Clone(old.Path)
		}
	}
	return dropFirst(paths)
}

// linkedKeys is the identity of the file a hard link linked: the one the
// kernel named (linked from a descriptor), else the one its old name
// leads to now; and the one its new name holds, unless that is the same,
// when the call was made (an io_uring request is not made yet). Both are
// remembered: the new name is the file linked, unless replaced since.
func (j *Judge) linkedKeys(ev *tracer.Event, paths []Verdict) []fileKey {
	keys := j.keys[:0]
	if ev.Has(tracer.SlotResolved) && ev.Ino != 0 {
		keys = append(keys, fileKey{dev: ev.Dev, ino: ev.Ino})
	} else if f, err := j.host.Lstat(paths[0].Path); err == nil {
		keys = append(keys, keyOf(f.Dev, f.Ino))
	}
	if nw := paths[len(paths)-1]; !ev.ViaIOUring && !nw.Truncated && nw.Role == report.RoleNew {
		if f, err := j.host.Lstat(nw.Path); err == nil && (len(keys) == 0 || keyOf(f.Dev, f.Ino) != keys[0]) {
			keys = append(keys, keyOf(f.Dev, f.Ino))
		}
	}
	j.keys = keys
	return keys
}

// dropFirst removes the first verdict, keeping the slice's start (the
// judge reuses it).
func dropFirst(paths []Verdict) []Verdict {
	copy(paths, paths[1:])
	return paths[:len(paths)-1]
}

// throughLinks adds, to the verdicts of a write that changes a file in
// place (its contents or its metadata), one for the name a file it
// writes was hard-linked from outside the allowlist during the run.
// The file is the one the kernel named, else the one its path leads to
// now.
func (j *Judge) throughLinks(ev *tracer.Event, paths []Verdict) []Verdict {
	if len(j.linked) == 0 || ev.Op.Kind() == ops.Namespace || (ev.Ret < 0 && !ev.ViaIOUring) ||
		(ev.Op.Opens() && (ev.Created || ev.Flags&oTmpfile != 0)) {
		return paths
	}
	for i := range paths {
		v := paths[i]
		var k fileKey
		switch {
		case ev.Has(tracer.SlotResolved) && ev.Ino != 0:
			k = fileKey{dev: ev.Dev, ino: ev.Ino}
		case v.Truncated || v.Path == "":
			continue
		default:
			f, err := j.host.Lstat(v.Path)
			if err != nil {
				continue
			}
			k = keyOf(f.Dev, f.Ino)
		}
		if src, ok := j.linked[k]; ok && src != v.Path {
			paths = append(paths, Verdict{Op: v.Op, Path: src, Requested: v.Requested})
		}
	}
	return paths
}
