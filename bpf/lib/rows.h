/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * What each operation is and does, read from its row of the table of
 * operations (internal/ops) through the lists ops.h holds: a new
 * operation needs nothing here. Macros, as OP_IN is (writewatch.h).
 */
#ifndef WW_LIB_ROWS_H
#define WW_LIB_ROWS_H

#include "uapi.h"
#include "arch.h"

/* Does op change a file's metadata (ops.Metadata)? */
#define IS_METADATA(op) OP_IN(WW_METADATA_OPS, op)

/* Does op write a file's contents with no event of the filesystem
 * witness's (a shared mapping, Linux AIO)? It hears of such a write at
 * the file's last close at best, which may come after the run, or from
 * a process outside the tree (ops.Unnotified). */
#define UNNOTIFIED(op) OP_IN(WW_UNNOTIFIED_OPS, op)

/* Does the witness hear of op's change as one of contents
 * (ops.DataModified), which it sees only while contents are watched? */
#define MODIFIES(op) OP_IN(WW_MODIFYING_OPS, op)

/* Does op change a file's mode, owner or times, which the kernel notes
 * before the call (ops.Restorable)? */
#define RESTORABLE(op) OP_IN(WW_RESTORABLE_OPS, op)

/* Does op move a name away, and what lies below it with it
 * (ops.MovesAway)? */
#define MOVES(op) OP_IN(WW_MOVING_OPS, op)

/* Does op move a name onto another, replacing what was there
 * (ops.MovesOnto)? */
#define MOVES_ONTO(op) OP_IN(WW_MOVING_ONTO_OPS, op)

/* Does op open the file it names for writing (ops.Opens)? */
#define OPENS(op) OP_IN(WW_OPENING_OPS, op)

/* Is op's first path a file it gives another name (ops.Links), which the
 * call may name by a descriptor the process holds? */
#define LINKS_FILE(op) OP_IN(WW_LINKING_OPS, op)

/* May the witness not see the change a call of op makes to the file a
 * symlink in its first path's last component leads to, when it follows
 * one (ops.Path.Unseen)? */
#define UNSEEN(op) OP_IN(WW_UNSEEN_OPS, op)

/* Does a call of op with flags follow a symlink in the last component of
 * its first path, so that the name says nothing of the file it writes
 * (ops.Path.Follows)? The rules in this order verify fewest instructions. */
#define FOLLOWS_LAST(op, flags)                                               \
	(OP_IN(WW_FOLLOW_ALWAYS_OPS, op)     ? true :                          \
	 OP_IN(WW_FOLLOW_AT_FLAG_OPS, op)    ? ((flags) & AT_SYMLINK_FOLLOW) != 0 : \
	 OP_IN(WW_FOLLOW_META_FLAG_OPS, op)  ? ((flags) & WW_META_FOLLOW) != 0 : \
	 OP_IN(WW_FOLLOW_OPEN_FLAGS_OPS, op) ? !((flags) & O_NOFOLLOW) &&       \
		((flags) & (O_CREAT | O_EXCL)) != (O_CREAT | O_EXCL) :          \
	 false)

#endif
