// Package policy turns an allowlist into what the kernel can check and
// enforce, and holds the tiers that enforce it.
//
// Without --enforce, the allowlist becomes inode marks that spare user
// space the writes the kernel can tell are allowed (ObserveMarks). Under
// --enforce, it becomes a Plan: the existing files and directories under
// which writes are granted, for a Landlock ruleset and for the inode marks
// the BPF programs check.
//
// The kernel mechanisms grant by inode, not by pattern, and cannot take a
// right back below a grant. So every allow entry is turned into grants on
// the safe side: a write the allowlist forbids is never granted; a write
// the allowlist allows may be refused when the entry cannot be expressed
// exactly (a glob, a deny rule inside it, a path missing at start). Plan
// says, entry by entry, which of these happened.
package policy
