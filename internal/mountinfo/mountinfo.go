// Package mountinfo reads /proc/self/mountinfo: the mounts of this
// process's mount namespace, with their devices, roots and mount points.
package mountinfo

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Mount is one line of /proc/self/mountinfo.
type Mount struct {
	ID     int
	Dev    uint64 // major:minor as st_dev encodes it
	Root   string // the directory of the filesystem mounted here
	Point  string // where it is mounted, in this mount namespace
	FSType string
	// Options are the filesystem's own options (the last field), with
	// their values still escaped.
	Options string
}

// Read parses /proc/self/mountinfo.
func Read() ([]Mount, error) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	return Parse(data)
}

// Parse parses the text of a mountinfo file; a line it cannot read is an
// error.
func Parse(data []byte) ([]Mount, error) {
	var out []Mount
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		// 36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw
		pre, post, ok := strings.Cut(line, " - ")
		f := strings.Fields(pre)
		g := strings.Fields(post)
		if !ok || len(f) < 5 || len(g) < 1 {
			return nil, fmt.Errorf("mountinfo line %q", line)
		}
		id, err := strconv.Atoi(f[0])
		if err != nil {
			return nil, fmt.Errorf("mountinfo line %q: %w", line, err)
		}
		maj, min, ok := strings.Cut(f[2], ":")
		ma, err1 := strconv.ParseUint(maj, 10, 32)
		mi, err2 := strconv.ParseUint(min, 10, 32)
		if !ok || err1 != nil || err2 != nil {
			return nil, fmt.Errorf("mountinfo line %q: device %q", line, f[2])
		}
		m := Mount{
			ID:     id,
			Dev:    unix.Mkdev(uint32(ma), uint32(mi)),
			Root:   Unescape(f[3]),
			Point:  Unescape(f[4]),
			FSType: g[0],
		}
		if len(g) >= 3 {
			m.Options = g[2]
		}
		out = append(out, m)
	}
	return out, sc.Err()
}

// Unescape undoes the octal escapes (\040 for a space) mountinfo writes
// for space, tab, newline and backslash.
func Unescape(s string) string {
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
			out = append(out, Unescape(v))
		}
	}
	return out
}
