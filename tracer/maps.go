package tracer

// The maps writewatch fills and reads besides the ring buffer: the
// allowlist's marks and prefixes, the tree (Arm, Tracked), the repeats
// of sent writes, contents on demand.

import (
	"errors"
	"fmt"
	"os"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/writewatch/writewatch/internal/ops"
)

// setPrefixes fills the allowed-prefix trie: a directory as "DIR/", a path
// allowed itself with its NUL, so that it matches only itself.
func (t *Tracer) setPrefixes(dirs, exact []string) error {
	keys := make([]writewatchPrefixKey, 0, len(dirs)+len(exact))
	put := func(s string) {
		var key writewatchPrefixKey
		if len(s) > len(key.Data) {
			return // refused: the kernel keeps no longer prefix
		}
		for i := range len(s) {
			key.Data[i] = int8(s[i])
		}
		key.Prefixlen = uint32(8 * len(s))
		keys = append(keys, key)
	}
	for _, d := range dirs {
		put(d)
	}
	for _, p := range exact {
		put(p + "\x00")
	}
	values := make([]uint32, len(keys))
	for i := range values {
		values[i] = 1
	}
	if err := batchUpdate(t.objs.Prefixes, keys, values); err != nil {
		return fmt.Errorf("set allowed prefixes: %w", err)
	}
	return nil
}

// setMarks fills the marks map, the kinds of marks on one inode or'ed
// together.
func (t *Tracer) setMarks(marks []Mark) error {
	kinds := make(map[writewatchInodeKey]uint32, len(marks))
	for _, m := range marks {
		kinds[writewatchInodeKey{Ino: m.Ino, Dev: kernelDev(m.Dev)}] |= uint32(m.Kind)
	}
	keys := make([]writewatchInodeKey, 0, len(kinds))
	values := make([]uint32, 0, len(kinds))
	for k, v := range kinds {
		keys = append(keys, k)
		values = append(values, v)
	}
	if err := batchUpdate(t.objs.Marks, keys, values); err != nil {
		return fmt.Errorf("set marks: %w", err)
	}
	return nil
}

// batchUpdate puts keys and values into m, in batches where the kernel
// takes them, else one by one.
func batchUpdate[K, V any](m *ebpf.Map, keys []K, values []V) error {
	const chunk = 1 << 14
	for len(keys) > 0 {
		n := min(len(keys), chunk)
		_, err := m.BatchUpdate(keys[:n], values[:n], nil)
		if errors.Is(err, ebpf.ErrNotSupported) {
			for i := range keys {
				if err := m.Update(keys[i], values[i], ebpf.UpdateAny); err != nil {
					return err
				}
			}
			return nil
		}
		if err != nil {
			return err
		}
		keys, values = keys[n:], values[n:]
	}
	return nil
}

// kernelDev converts a dev_t as stat reports it to the kernel's own
// encoding (major << 20 | minor), the one struct super_block holds.
func kernelDev(dev uint64) uint32 {
	return unix.Major(dev)<<20 | unix.Minor(dev)
}

// statDev is kernelDev's inverse.
func statDev(dev uint32) uint64 {
	return unix.Mkdev(dev>>20, dev&(1<<20-1))
}

// Arm makes the next process this process forks the root of the traced
// tree: the kernel adds it at fork, before it runs an instruction, and its
// descendants after it. Call Disarm once it is started.
func (t *Tracer) Arm() error {
	if err := t.objs.Launcher.Update(uint32(0), uint32(os.Getpid()), ebpf.UpdateAny); err != nil {
		return fmt.Errorf("arm launcher: %w", err)
	}
	return nil
}

// Disarm stops adding this process's children to the tree.
func (t *Tracer) Disarm() error {
	if err := t.objs.Launcher.Update(uint32(0), uint32(0), ebpf.UpdateAny); err != nil {
		return fmt.Errorf("disarm launcher: %w", err)
	}
	return nil
}

// Tracked lists the processes of the tree that are alive now.
func (t *Tracer) Tracked() ([]uint32, error) {
	var (
		key  uint32
		val  writewatchProc
		tids []uint32
	)
	it := t.objs.Procs.Iterate()
	for it.Next(&key, &val) {
		tids = append(tids, key)
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("list tracked processes: %w", err)
	}
	return tids, nil
}

// IsTracked reports whether the kernel counts process tgid (initial PID
// namespace) in the tree now: from its fork, before it ran, to its exit.
func (t *Tracer) IsTracked(tgid uint32) bool {
	var val writewatchProc
	return t.objs.Procs.Lookup(&tgid, &val) == nil
}

// Repeats calls fn for every write the kernel counted instead of sending
// again, with how many times it was repeated since it was sent.
func (t *Tracer) Repeats(fn func(k RepeatKey, n uint64)) error {
	var (
		key writewatchRepeatKey
		n   uint64
	)
	it := t.objs.Repeats.Iterate()
	for it.Next(&key, &n) {
		if n > 0 {
			fn(RepeatKey{Ino: key.Ino, Dev: key.Dev, Gen: key.Gen, TGID: key.Tgid, Op: ops.Op(key.Op), Flags: key.Flags, Test: key.Test, Epoch: key.Epoch}, n)
		}
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("read repeats: %w", err)
	}
	return nil
}

// StartMount is a mount of COMMAND's mount namespace when the run
// begins: its id (mountinfo's first field) and its filesystem's device
// as stat reports it.
type StartMount struct {
	ID  int
	Dev uint64
}

// devsKnown, among the devices at the start, says they were told
// (bpf/lib/mounts.h, DEVS_KNOWN).
const devsKnown = ^uint32(0)

// MountsAtStart tells the kernel the mounts COMMAND's mount namespace
// holds as the run begins. Through them, the path of a file the tree
// writes names for writewatch the file it names for the tree; through a
// mount made during the run, it may not, and a file of a filesystem in
// memory mounted by none of them was made during the run
// (bpf/lib/mounts.h). Call it before COMMAND starts; without it every
// mount counts as made during the run once the tree has mounted
// anything.
func (t *Tracer) MountsAtStart(mounts []StartMount) error {
	type mountKey struct{ ID, Dev uint32 }
	keys := make([]mountKey, 0, len(mounts))
	devs := map[uint32]bool{}
	for _, m := range mounts {
		dev := kernelDev(m.Dev)
		keys = append(keys, mountKey{uint32(m.ID), dev})
		devs[dev] = true
	}
	devKeys := make([]uint32, 0, len(devs)+1)
	for d := range devs {
		devKeys = append(devKeys, d)
	}
	// Past the maps' size, a mount counts as made during the run: its
	// paths are doubted, not trusted. The devices must all fit: a
	// filesystem left out would count as made during the run, its files
	// as the tree's own.
	keys = keys[:min(len(keys), int(t.objs.StartMounts.MaxEntries()))]
	if len(devKeys) >= int(t.objs.StartDevs.MaxEntries()) {
		return fmt.Errorf("tracer: mounts at start: %d filesystems, more than %d", len(devKeys), t.objs.StartDevs.MaxEntries()-1)
	}
	devKeys = append(devKeys, devsKnown)
	if err := batchUpdate(t.objs.StartMounts, keys, make([]uint8, len(keys))); err != nil {
		return fmt.Errorf("tracer: mounts at start: %w", err)
	}
	if err := batchUpdate(t.objs.StartDevs, devKeys, make([]uint8, len(devKeys))); err != nil {
		return fmt.Errorf("tracer: mounts at start: %w", err)
	}
	return nil
}

// MountCalls is the tree's count of calls that change mounts (mount,
// umount2, move_mount, pivot_root, chroot...), counted in the kernel at
// their entry: when it has not moved since a record with OwnView, no
// mount of the tree's moved since that write.
func (t *Tracer) MountCalls() uint32 {
	var n uint32
	if err := t.objs.MountCalls.Lookup(uint32(0), &n); err != nil {
		return ^uint32(0) // unknown: never the count a record holds
	}
	return n
}

// ContentsLater tells the kernel that the filesystem witness does not
// watch file contents yet: a process of the tree that makes one of the
// calls after which they must be watched is paused, and a KindContents
// record (or a KindExec record with ExecContents) asks for them
// (bpf/lib/contents.h). Call it before COMMAND starts.
func (t *Tracer) ContentsLater() error {
	if err := t.objs.Contents.Update(uint32(0), writewatchContentsState{Lazy: 1}, ebpf.UpdateAny); err != nil {
		return fmt.Errorf("tracer: contents later: %w", err)
	}
	return nil
}

// ContentsWatched tells the kernel that file contents are watched now:
// no process is paused for them any more, and no write is counted or
// marked as unwatched.
func (t *Tracer) ContentsWatched() error {
	var c writewatchContentsState
	if err := t.objs.Contents.Lookup(uint32(0), &c); err != nil {
		return fmt.Errorf("tracer: contents watched: %w", err)
	}
	c.Lazy, c.Window = 0, 0
	if err := t.objs.Contents.Update(uint32(0), c, ebpf.UpdateAny); err != nil {
		return fmt.Errorf("tracer: contents watched: %w", err)
	}
	return nil
}

// cloneMaps clones this tracer's maps, for programs that load in the
// background: Close may close its own meanwhile.
func (t *Tracer) cloneMaps() (map[string]*ebpf.Map, error) {
	maps := map[string]*ebpf.Map{}
	for name, m := range t.objs.writewatchMaps.all() {
		c, err := m.Clone()
		if err != nil {
			closeMaps(maps)
			return nil, fmt.Errorf("clone map %s: %w", name, err)
		}
		maps[name] = c
	}
	return maps, nil
}
