package run

import (
	"path/filepath"
	"strings"
	"unsafe"

	"github.com/writewatch/writewatch/internal/report"
	"github.com/writewatch/writewatch/internal/tracer"
)

const oTmpfile = 0o20000000 // __O_TMPFILE

// target is one path a write record touches, as judged.
type target struct {
	op        string
	role      string
	path      string // absolute, clean; what the allowlist judges
	requested string // as the process passed it
	truncated bool
}

// judge turns a write record into the paths it writes: rename and link
// have two, everything else one. The targets' strings are views of the
// record and of scratch space reused by the next call: callers that keep
// one must clone it.
type judge struct {
	bufs [2][]byte
	n    int // the next buffer to use
}

// scratch returns an empty buffer that no other target of this record
// uses.
func (j *judge) scratch() []byte {
	b := j.bufs[j.n%len(j.bufs)][:0]
	return b
}

// view keeps b as the current scratch buffer and returns it as a string
// without copying.
func (j *judge) view(b []byte) string {
	j.bufs[j.n%len(j.bufs)] = b
	j.n++
	return unsafe.String(unsafe.SliceData(b), len(b))
}

func (j *judge) targets(ev *tracer.Event, out []target) []target {
	j.n = 0
	op := ev.Op.String()
	switch ev.Op {
	case tracer.OpRename, tracer.OpLink:
		// A hard link to a file is a new way to write that file: the
		// file linked is judged too, unless it is a file the process
		// holds open (the O_TMPFILE idiom: linkat of /proc/self/fd/N, or
		// of "" with AT_EMPTY_PATH), which was judged when it was opened.
		if ev.Op == tracer.OpRename || !HeldOpen(ev.String(tracer.SlotPath)) {
			out = append(out, j.target(ev, op, report.RoleOld, tracer.SlotPath, tracer.SlotDir).resolved())
		}
		return append(out, j.target(ev, op, report.RoleNew, tracer.SlotPath2, tracer.SlotDir2).resolved())
	case tracer.OpSymlink:
		return append(out, j.target(ev, op, report.RoleNew, tracer.SlotPath, tracer.SlotDir).resolved())
	}
	// A call on a file descriptor (fchmod, fsetxattr, futimens...) acts on
	// the file the kernel found behind it, and so does a metadata change
	// through a descriptor's link (/dev/stdout, /proc/self/fd/N).
	if ev.Has(tracer.SlotResolved) && (!ev.Has(tracer.SlotPath) || ev.Op.Metadata()) {
		return append(out, target{
			op:        op,
			path:      j.view(ev.AppendDir(j.scratch(), tracer.SlotResolved)),
			requested: slotView(ev, tracer.SlotPath),
			truncated: ev.Truncated(tracer.SlotResolved),
		})
	}
	// A successful open judges the file the kernel opened, symlinks and
	// all (the kernel sends no start directory then), except an
	// O_TMPFILE, whose file has no name yet: its directory is what was
	// asked for.
	if (ev.Op == tracer.OpOpen || ev.Op == tracer.OpCreat) && ev.Ret >= 0 &&
		ev.Has(tracer.SlotResolved) && ev.Flags&oTmpfile == 0 {
		return append(out, target{
			op:        op,
			path:      j.view(ev.AppendDir(j.scratch(), tracer.SlotResolved)),
			requested: slotView(ev, tracer.SlotPath),
			truncated: ev.Truncated(tracer.SlotPath) || ev.Truncated(tracer.SlotResolved),
		})
	}
	t := j.target(ev, op, "", tracer.SlotPath, tracer.SlotDir).resolved()
	// chmod and the like follow a symlink in the last component too:
	// judge the file it points to, while it is there.
	// Not under /proc or /dev, whose links (/proc/self, /dev/stdin) would
	// name writewatch's own files here: the kernel resolved the
	// descriptor links it knows (see above).
	if ev.Op.Metadata() && ev.Flags&tracer.MetaFollow != 0 && !t.truncated &&
		!strings.HasPrefix(t.path, "/proc/") && !strings.HasPrefix(t.path, "/dev/") {
		if real, err := filepath.EvalSymlinks(t.path); err == nil {
			t.path = real
		}
	}
	return append(out, t)
}

// target builds the absolute path of a path slot, starting from its
// directory slot when relative.
func (j *judge) target(ev *tracer.Event, op, role string, ps, ds tracer.Slot) target {
	req := slotView(ev, ps)
	t := target{op: op, role: role, requested: req, truncated: ev.Truncated(ps)}
	if strings.HasPrefix(req, "/") {
		t.path = filepath.Clean(req)
	} else {
		b := ev.AppendDir(j.scratch(), ds)
		b = append(b, '/')
		b = append(b, req...)
		t.path = filepath.Clean(j.view(b))
		t.truncated = t.truncated || ev.Truncated(ds) || !ev.Has(ds)
	}
	return t
}

// resolved follows symlinks in the directories above the path, as the
// kernel did when it looked the path up; the last component itself is
// what the operation acted on. The path stays as it is when its directory
// is gone.
func (t target) resolved() target {
	dir, base := filepath.Split(t.path)
	if dir == "/" || dir == "" || t.truncated {
		return t
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		t.path = filepath.Join(real, base)
	}
	return t
}

// openFlags names the flags of an open that make it a write.
func openFlags(flags uint32) string {
	var parts []string
	switch flags & 3 {
	case 0:
		parts = append(parts, "O_RDONLY")
	case 1:
		parts = append(parts, "O_WRONLY")
	case 2:
		parts = append(parts, "O_RDWR")
	}
	for _, f := range []struct {
		bit  uint32
		name string
	}{{0o100, "O_CREAT"}, {0o200, "O_EXCL"}, {0o1000, "O_TRUNC"}, {0o2000, "O_APPEND"}, {oTmpfile, "O_TMPFILE"}} {
		if flags&f.bit != 0 {
			parts = append(parts, f.name)
		}
	}
	return strings.Join(parts, "|")
}

// HeldOpen reports whether a link's source names a file through a file
// descriptor the process holds: "" (AT_EMPTY_PATH) or /proc/{self,PID,
// thread-self}/fd/N.
func HeldOpen(path string) bool {
	if path == "" {
		return true
	}
	rest, ok := strings.CutPrefix(path, "/proc/")
	if !ok {
		return false
	}
	who, rest, ok := strings.Cut(rest, "/")
	if !ok || (who != "self" && who != "thread-self" && strings.Trim(who, "0123456789") != "") {
		return false
	}
	n, ok := strings.CutPrefix(rest, "fd/")
	return ok && n != "" && strings.Trim(n, "0123456789") == ""
}

// slotView is slot s of ev as a string, without its NUL and without
// copying: valid until the next record is read.
func slotView(ev *tracer.Event, s tracer.Slot) string {
	b := ev.Bytes(s)
	if n := len(b); n > 0 && b[n-1] == 0 {
		b = b[:n-1]
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}
