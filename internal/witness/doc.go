// Package witness is a second witness of what changed on disk: the
// kernel's own filesystem notifications (fanotify), independent of the
// system calls the tracer hooks.
//
// # What it watches
//
// New puts a filesystem mark (FAN_MARK_FILESYSTEM) on the filesystem of
// each given path, once per filesystem, for creates, deletes, renames
// (FAN_RENAME with the moved object's FAN_MOVE_SELF, which ends a
// rename's events and tells whether it replaced a file: renames.go; or
// FAN_MOVED_FROM and FAN_MOVED_TO before Linux 5.17), attribute changes, writes and closes after writing (the last two may
// come later: see below), on files and directories alike. The group
// reports directory handles and names with the object's own handle
// (FAN_REPORT_DFID_NAME_TARGET, or FAN_REPORT_DFID_NAME|FAN_REPORT_FID
// before 5.17), so each event says which entry of which directory the
// kernel acted on: the path after the kernel followed every symlink and
// "..", whatever string the process passed, and whichever way the change
// came (a system call, io_uring, a descriptor inherited or passed, a
// hard link). Filesystem marks need CAP_SYS_ADMIN: without it New
// returns ErrNeedsRoot.
//
// A filesystem that cannot be marked is listed by Filesystems with the
// kernel's reason, not skipped: one without file handle support
// (procfs, sysfs, devpts; overlayfs unless mounted with nfs_export=on:
// EOPNOTSUPP), one with no fsid (ENODEV), a btrfs subvolume other than
// its filesystem's root (EXDEV).
//
// With Options.ContentsLater the filesystem marks leave the content
// events (writes and closes after writing, FAN_MODIFY and
// FAN_CLOSE_WRITE) out, for what they cost every writer (see Cost),
// until WatchContents adds them to every mark; once it has returned nil,
// every content change on a watched filesystem that no ignore mark drops
// is an event, as without ContentsLater. Each mark is placed through an
// O_PATH descriptor of its given path, kept until Close, and
// WatchContents marks the filesystem again through it: the paths need
// not exist by then. Until then, the contents of a file are events only
// when WatchFile has marked it: an inode mark on the file an open
// descriptor names, which must lie on a watched filesystem (not a memfd,
// a pipe or a file elsewhere); its events come, and are resolved, like
// those of the filesystem marks. Ignore and IgnoreFile leave the
// content events out of their marks meanwhile, and WatchContents adds
// them to the marks placed before, through an O_PATH descriptor kept for
// each.
//
// # Events
//
// Handle receives each record in the kernel's order, from one goroutine:
// the acting process (its thread group id, as the witness's PID
// namespace numbers it), the ops, whether the object is a directory, its
// path, and its inode (Dev, Ino) and that of its directory (DirIno, with
// Name), decoded from the handles. The kernel merges an event into one
// still queued when the same process acts on the same entry again, so
// one Event can carry several ops; its Path is the entry's as of the
// first. A queue overflow is an Event with Op Overflow and is counted
// in Stats.Overflows: the run uses it to fail a run that could not see
// everything. With FAN_UNLIMITED_QUEUE (the default) the kernel does not
// drop events.
//
// # Paths and the directory cache
//
// The kernel names a directory by its file handle, not its path; the
// witness opens the handle (open_by_handle_at, O_PATH) through a mount
// of the filesystem and reads the descriptor's path in /proc/self/fd. A
// path counts only if it names the same inode as the handle: through a
// bind mount of a subdirectory, a directory outside it reads as "/", so
// the witness tries the mounts of the given paths first, then one that
// mounts the filesystem's root, and checks the answer with a stat.
//
// Resolved directory paths are cached per filesystem, by handle. The
// rule that keeps a cached path from being wrong: records are handled in
// the kernel's order, and the cache of a filesystem is emptied when a
// record of a directory moved there is handled (a rename of any
// directory may change the path of everything under it), when a queue
// overflow is handled (lost records may have moved directories), and a
// directory's entry goes when its deletion is handled. So a cached path
// was right at some moment after the last directory move the witness has
// read, and no event is named through a path older than itself. Paths
// also come from the events themselves: a directory created or moved
// with its handle reported (FAN_REPORT_TARGET_FID) is cached under the
// path the event gives it, which is exact as of that event.
//
// What the rule cannot give: a directory's path is resolved when its
// event is read, so when a directory above the entry was renamed after
// the event and before the witness read it, Path shows the later name.
// DirIno and Name, and Handle for the object, identify the entry
// whatever happened to the path since.
//
// A directory that is gone by the time its events are read no longer
// opens (ESTALE). Its events are still delivered, with Source LastKnown:
// the path the witness last saw it at (from an earlier resolution or
// from the event that created it) joined with the name, or no path but
// the name and DirIno when it never saw the directory. An object the
// kernel reported without a directory (a link count change, or a write
// through a descriptor with no parent, such as one from
// open_by_handle_at) is resolved by its own handle (Source ByObject).
//
// # Sync
//
// Sync returns once every event queued before it was called has been
// handled. The kernel queues an event in the acting process's system
// call, before the call returns, and in order; Sync creates and removes
// a uniquely named file in the witness's private directory and waits
// for the reader to reach that creation. Unlike waiting for an empty
// queue, this ends under sustained load from other processes. The
// private directory may be on any filesystem with file handle support;
// it is watched on its own when its filesystem is not.
//
// # Cost
//
// The marks cover whole filesystems: every process's changes there are
// events, allocated and queued in that process's system call, and read
// by the witness. Wanted lets the caller decline events by pid before
// they are resolved; Ignore drops a busy directory's direct entries in
// the kernel (FAN_MARK_IGNORE, Linux 6.0), at the price described
// there, and IgnoreFile one file's writes and attribute changes.
// BenchmarkOutsideWriter measures a writer outside the tree that
// creates, writes, closes and unlinks small files in a loop, and
// BenchmarkRewrite one that rewrites a file that exists.
//
// The content events are the dear ones, for they come with every write
// and every close after writing. Once a filesystem mark asks for them,
// each such call on the filesystem, by any process, takes the kernel's
// notification path: it takes the parent directory and a copy of the
// name and walks the marks, and only then are ignore marks consulted;
// an event no ignore mark drops is also allocated, its handles encoded,
// and merged into one queued. An ignore mark of a directory (Ignore)
// whose mask holds them makes its entries' writes take that path too,
// whatever the other marks ask for. A mark without them costs a write a
// test of the masks. Hence ContentsLater, for a caller that learns of
// most writes otherwise (the tracer's records of what a process opens
// for writing) and needs the content events only for files it could not
// see opened (WatchFile), or from some point on (WatchContents).
//
// Measured on a shared 2-core VM (Linux 6.18, ext4, load average about
// 11 from other work, so wall times spread from 30 to 170 µs a file):
// 25 rounds of 20,000 files per mode, the modes interleaved, medians
// (and the least of the 25):
//
//	mode              writer wall   writer CPU   witness CPU   events
//	unwatched         65 (32) µs    42 (24) µs   -             -
//	watched           70 (42) µs    54 (32) µs   10.2 µs       2.0
//	watched, declined 60 (32) µs    50 (29) µs    3.6 µs       2.0
//	watched, ignored  65 (42) µs    49 (34) µs    8.3 µs       1.0
//
// per file. The kernel merges each file's create, write, close and
// unlink into one queued event while it waits to be read; the second is
// the link count change of the unlink, an event on the file alone. The
// writer pays 5 to 12 µs of CPU a file (least to median) for queuing
// them in this VM, within the spread of its wall time. The witness's own CPU is what grows: resolving every event
// (watched) costs about 10 µs a file, most of it the lookup by handle of
// each unlinked file's link count event, which fails (ESTALE); declining
// the writer's pid costs 3.6 µs a file, the reads themselves. An ignore
// mark on the writer's directory halves the events, but its link count
// events stay and are still looked up. The reader waits in poll(2) and
// lets a trickle gather for 5 ms before reading again (a Sync, whose
// marker is queued then, and Close cut that wait short): in Go's network
// poller, every queued event woke the runtime, about 25 µs a file.
//
// BenchmarkRewrite on a 2-core VM (Linux 6.18, ext4, load average about
// 1): a loop opening a file that exists, writing 64 bytes at its start
// and closing it, its events declined; 20 rounds per mode, the modes
// interleaved, medians (and the least) per rewrite, the writer's CPU
// within 1 % of its wall time:
//
//	mode                            writer wall
//	unmarked                        4.5 (4.4) µs
//	marked                          6.6 (6.3) µs
//	contents later                  4.5 (4.3) µs
//	contents later, dir ignored     5.0 (4.7) µs
//	contents later, file watched    6.9 (6.4) µs
//
// The full marks cost each rewrite 2.1 µs, close to half again its
// unmarked time; with ContentsLater the cost is lost in the spread. A
// file marked by WatchFile pays the full marks' price, and only it. An
// ignore mark without the content events still has its directory's
// entries take a reference to their parent on each write (0.5 µs here);
// with them, it would make those writes take the notification path.
//
// # Filesystems
//
// Seen on Linux 6.18 (and, for ext4, tmpfs and procfs, on Debian's 6.1
// and 6.12):
//
//   - ext4, xfs, tmpfs: watched; Ino decoded.
//   - btrfs: a filesystem mark on the top-level subvolume (subvolid 5)
//     sees every subvolume, with the top level's fsid, so Dev is the top
//     level's st_dev and Ino (the objectid) is unique only within a
//     subvolume. Any other subvolume is refused (EXDEV), even when it is
//     what is mounted at / (as Fedora does): mount the top level
//     somewhere and watch that.
//   - overlayfs: refused (EOPNOTSUPP) unless mounted with
//     index=on,nfs_export=on; then watched, but its handles have a
//     layout of their own, so Ino is 0. Container root filesystems are
//     usually overlayfs without nfs_export.
//   - procfs, sysfs, devpts: refused (no file handles; procfs on 6.1:
//     no fsid, ENODEV).
//
// # Limits
//
//   - Writes through a shared memory mapping make no event.
//   - Inode flag changes (chattr: FS_IOC_SETFLAGS, FS_IOC_FSSETXATTR,
//     file_setattr) make no event; extended attributes and ACLs do
//     (Attrib).
//   - A close deferred to a kernel worker (the last reference to a file
//     dropped by an io_uring ring's teardown) carries the worker's pid.
//   - Pid numbers are the witness's PID namespace's: 0 for a process
//     not visible there. A pid can be reused once its process is reaped.
//   - Ino is decoded from the handle by the layouts of its type
//     (ext2/3/4, xfs, tmpfs, btrfs), once a given path's handle checked
//     out on that filesystem; it is 0 elsewhere (overlayfs). Handle is
//     the identity in every case.
package witness
