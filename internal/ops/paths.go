package ops

import "golang.org/x/sys/unix"

// Path is what an operation does to one of the paths it names: the file
// it acts on, named by a path (the record's path slot, then its second)
// or by a descriptor (the file behind it).
type Path struct {
	// Role is the path's role in an operation of two paths
	// (report.RoleOld, report.RoleNew), and a symlink's new name's;
	// "" for the one path of any other.
	Role string
	// Effect is what a call that succeeded did there.
	Effect Effect
	// Follow says when the call follows a symlink in the path's last
	// component (Follows).
	Follow Follow
	// Unseen: when the call follows a symlink there, the filesystem
	// witness may not see the change it makes to the file it reaches,
	// to name that file (a truncate, a change of times, a hard link's
	// source): the judge follows the path after the call, and the
	// kernel pauses the process until it has (tracer.Event.Paused).
	Unseen bool
}

// Effect is what a call that succeeded did to one of its paths.
type Effect uint8

const (
	// Opens opens the file for writing: it made the file when the
	// call says so (FMODE_CREATED, O_TMPFILE), else changed the one
	// there. One that succeeded is judged by the file it opened.
	Opens Effect = iota + 1
	// Creates makes a new name: a directory, a node, a symlink, a
	// hard link's new name.
	Creates
	// Changes changes the file there: its contents, size or
	// attributes.
	Changes
	// Removes removes the name.
	Removes
	// MovesAway renames the name away (rename's old path).
	MovesAway
	// MovesOnto renames a name onto the path, replacing what was there
	// (rename's new path).
	MovesOnto
	// Links gives the file there another name (a hard link's source).
	// The call may name it by a descriptor the process holds ("" with
	// AT_EMPTY_PATH, /proc/self/fd/N).
	Links
)

// Follow says when a call follows a symlink in the last component of a
// path, to the file it points to.
type Follow uint8

const (
	// FollowNever: the last component is the entry the call acts on.
	FollowNever Follow = iota
	// FollowAlways: truncate(2).
	FollowAlways
	// FollowOpenFlags: unless O_NOFOLLOW, or O_CREAT with O_EXCL.
	FollowOpenFlags
	// FollowMetaFlag: when the kernel side marks the call MetaFollow
	// (chmod but not lchown, an *at call without AT_SYMLINK_NOFOLLOW);
	// unmarked, a slash after the last component still makes the
	// kernel follow it.
	FollowMetaFlag
	// FollowAtFlag: with AT_SYMLINK_FOLLOW (linkat).
	FollowAtFlag
)

// MetaFollow is set in the flags of a metadata change by path that
// follows a symlink in the last component (WW_META_FOLLOW; tracer's
// MetaFollow).
const MetaFollow = 1

// Follows reports whether a call with flags (the record's) follows a
// symlink in the path's last component.
func (p Path) Follows(flags uint32) bool {
	switch p.Follow {
	case FollowAlways:
		return true
	case FollowOpenFlags:
		const createExcl = unix.O_CREAT | unix.O_EXCL
		return flags&unix.O_NOFOLLOW == 0 && flags&createExcl != createExcl
	case FollowMetaFlag:
		return flags&MetaFollow != 0
	case FollowAtFlag:
		return flags&unix.AT_SYMLINK_FOLLOW != 0
	}
	return false
}

// Change is a set of the changes the filesystem witness reports of a
// name: those a call of an operation can make are in its row.
type Change uint8

const (
	NameCreated  Change = 1 << iota // a name was made
	NameDeleted                     // a name was removed
	NameMoved                       // a name was renamed, from or to
	DataModified                    // contents changed, or a descriptor open for writing was closed
	AttrsChanged                    // mode, owner, times, extended attributes or link count changed
)
