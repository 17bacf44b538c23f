// Package mountinfo gives the mounts of this process's mount namespace,
// with their devices, roots and mount points, as the rest of writewatch
// uses them. github.com/moby/sys/mountinfo reads and parses
// /proc/thread-self/mountinfo (the namespace writewatch's threads share);
// this package keeps the fields writewatch uses, the device as st_dev
// encodes it, and reads an overlay's layers from its options.
package mountinfo

import (
	"bytes"
	"strconv"
	"strings"

	moby "github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

// Mount is one line of mountinfo.
type Mount struct {
	ID     int
	Parent int    // the mount this one is mounted on
	Dev    uint64 // major:minor as st_dev encodes it
	Root   string // the directory of the filesystem mounted here
	Point  string // where it is mounted, in this mount namespace
	FSType string
	// Options are the filesystem's own options (the last field), with
	// their values still escaped.
	Options string
	// MountOptions are the mount's own (the sixth field: rw or ro,
	// nosuid, nodev, noexec...).
	MountOptions string
}

// Read reads the mounts of this mount namespace. A line longer than
// 64 KiB, which only an overlay of hundreds of layers could write, is an
// error (the library's line buffer).
func Read() ([]Mount, error) {
	return convert(moby.GetMounts(nil))
}

// Parse parses the text of a mountinfo file; a line it cannot read is an
// error.
func Parse(data []byte) ([]Mount, error) {
	return convert(moby.GetMountsFromReader(bytes.NewReader(data), nil))
}

func convert(infos []*moby.Info, err error) ([]Mount, error) {
	if err != nil {
		return nil, err
	}
	out := make([]Mount, len(infos))
	for i, m := range infos {
		out[i] = Mount{
			ID:      m.ID,
			Parent:  m.Parent,
			Dev:     unix.Mkdev(uint32(m.Major), uint32(m.Minor)),
			Root:    m.Root,
			Point:   m.Mountpoint,
			FSType:  m.FSType,
			Options: m.VFSOptions,

			MountOptions: m.Options,
		}
	}
	return out, nil
}

// OverlayLayers are the directories an overlay mount writes: its upper
// and work directories (upperdir=, workdir=), as the process that
// mounted it named them; none for another filesystem or a read-only
// overlay.
func (m Mount) OverlayLayers() []string {
	if m.FSType != "overlay" {
		return nil
	}
	var out []string
	for opt := range strings.SplitSeq(m.Options, ",") {
		k, v, _ := strings.Cut(opt, "=")
		if (k == "upperdir" || k == "workdir") && v != "" {
			out = append(out, unescape(v))
		}
	}
	return out
}

// unescape undoes the octal escapes (\054 for a comma, \040 for a space)
// the kernel writes in an option's value: the library undoes them in
// paths, not in options.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ReadOnly says the mount is read-only (its own ro option).
func (m Mount) ReadOnly() bool {
	for opt := range strings.SplitSeq(m.MountOptions, ",") {
		if opt == "ro" {
			return true
		}
	}
	return false
}
