package witness

import (
	"encoding/json"
	"strings"

	"github.com/writewatch/writewatch/tracer"
)

// Op is a set of changes one event reports. The kernel merges an event
// into one still queued when the same process did something to the same
// object (same directory and name), so one Event can carry several Ops:
// "create|modify|close-write" is a file created, written and closed
// before the witness read the queue.
type Op uint16

const (
	Create     Op = 1 << iota // a name was created (creat, mkdir, link, symlink, mknod, bind)
	Delete                    // a name was removed (unlink, rmdir)
	MoveFrom                  // a name left its directory (kernels without FAN_RENAME)
	MoveTo                    // a name arrived in a directory (kernels without FAN_RENAME)
	Rename                    // a name moved: OldPath to Path (FAN_RENAME)
	Attrib                    // mode, owner, times, xattrs or link count changed
	Modify                    // the file's data changed (write, truncate, fallocate)
	CloseWrite                // a descriptor opened for writing was closed
	Overflow                  // the kernel's queue overflowed: events were lost here
	// MoveSelf: the object moved (the last event of its rename), named
	// by its handle alone (renames.go).
	MoveSelf
)

var opNames = [...]string{"create", "delete", "move-from", "move-to", "rename",
	"attrib", "modify", "close-write", "overflow", "move-self"}

// String names the ops in a fixed order, joined by "|".
func (o Op) String() string {
	if o == 0 {
		return "none"
	}
	var b strings.Builder
	for i, name := range opNames {
		if o&(1<<i) == 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('|')
		}
		b.WriteString(name)
	}
	return b.String()
}

// Source says how an Event's Path was found.
type Source uint8

const (
	// ByName: the kernel named the directory (by handle) and the entry
	// in it; the directory's handle was resolved to its path.
	ByName Source = iota
	// ByObject: the kernel named only the object itself (a link count
	// change, or a write through a descriptor that has no parent, such
	// as one from open_by_handle_at); Path is a name the object has now,
	// "" when it has none.
	ByObject
	// LastKnown: the directory no longer exists (its handle is stale).
	// Path is built from the last path the witness saw it at, from an
	// earlier event or resolution; "" when it never saw it (Name and
	// DirIno still say what the kernel reported).
	LastKnown
	// Unresolved: the handle could not be turned into a path through any
	// mount of its filesystem visible here; Path is "".
	Unresolved
	// Layer: the change is an overlay writing its upper or work
	// directory, for a write made through the overlay, which the
	// overlay's own paths name (and system calls report): Path is in
	// the layer, or "" when the layers are outside this mount
	// namespace, as a container's are, and the object opens by its
	// handle but has no path here.
	Layer
)

func (s Source) String() string {
	switch s {
	case ByName:
		return "by-name"
	case ByObject:
		return "by-object"
	case LastKnown:
		return "last-known"
	case Layer:
		return "overlay-layer"
	default:
		return "unresolved"
	}
}

// Event is one record of the kernel's queue: what changed, where, and
// which process did it.
type Event struct {
	// Seq numbers the records as the kernel queued them, from 1.
	Seq uint64
	// Pid is the acting process (its thread group id), numbered in the
	// witness's PID namespace; 0 when it is not visible there. A change
	// a kernel thread makes on a process's behalf (a close deferred to a
	// worker) carries the worker's pid.
	Pid int32
	Op  Op
	// IsDir: the object is a directory.
	IsDir bool
	// Path is the object's absolute path: its directory's path (as that
	// directory is named when the witness resolves it) joined with the
	// name the kernel reported. See Source.
	Path string
	// OldPath is where a Rename moved the object from.
	OldPath string
	Source  Source
	// Dev is the st_dev of the watched filesystem the event came from.
	Dev uint64
	// Ino is the object's inode number, decoded from its file handle;
	// 0 when the kernel sent no handle for the object or the handle's
	// layout is not known for this filesystem.
	Ino uint64
	// DirIno is the inode number of the directory Name is in, 0 when
	// unknown. DirIno and Name name the entry exactly, whatever happened
	// to the directory's path since.
	DirIno uint64
	// Name is the entry as the kernel reported it ("" when it reported
	// only the object, or the event is on a directory itself).
	Name string
	// Handle is the object's file handle (type, then bytes), an identity
	// that also tells apart two files that reused one inode number.
	// Empty when the kernel sent none.
	Handle string
}

// jsonEvent is an Event as a recording of a run keeps it: its names as
// tracer.Bytes, which keeps a name that is not UTF-8 as it is.
type jsonEvent struct {
	Seq     uint64       `json:"seq,omitempty"`
	Pid     int32        `json:"pid"`
	Op      Op           `json:"op"`
	IsDir   bool         `json:"dir,omitempty"`
	Path    tracer.Bytes `json:"path,omitempty"`
	OldPath tracer.Bytes `json:"old_path,omitempty"`
	Source  Source       `json:"source,omitempty"`
	Dev     uint64       `json:"dev,omitempty"`
	Ino     uint64       `json:"ino,omitempty"`
	DirIno  uint64       `json:"dir_ino,omitempty"`
	Name    tracer.Bytes `json:"name,omitempty"`
	Handle  tracer.Bytes `json:"handle,omitempty"`
}

// MarshalJSON writes the change as a recording keeps it.
func (e *Event) MarshalJSON() ([]byte, error) {
	return json.Marshal(jsonEvent{e.Seq, e.Pid, e.Op, e.IsDir, tracer.Bytes(e.Path), tracer.Bytes(e.OldPath), e.Source,
		e.Dev, e.Ino, e.DirIno, tracer.Bytes(e.Name), tracer.Bytes(e.Handle)})
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (e *Event) UnmarshalJSON(data []byte) error {
	var j jsonEvent
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	*e = Event{j.Seq, j.Pid, j.Op, j.IsDir, string(j.Path), string(j.OldPath), j.Source, j.Dev, j.Ino, j.DirIno, string(j.Name), string(j.Handle)}
	return nil
}
