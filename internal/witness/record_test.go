package witness

import (
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"
)

type info struct {
	typ    uint8
	fsid   fsid
	htype  int32
	handle []byte
	name   string
	raw    []byte // a record of another type, as is
}

// testRecord builds a record as the kernel lays it out.
func testRecord(mask uint64, pid int32, infos []info) []byte {
	ne := binary.NativeEndian
	var body []byte
	for _, in := range infos {
		var rec []byte
		if in.raw != nil {
			rec = append([]byte{in.typ, 0, 0, 0}, in.raw...)
		} else {
			rec = []byte{in.typ, 0, 0, 0}
			rec = ne.AppendUint32(rec, uint32(in.fsid[0]))
			rec = ne.AppendUint32(rec, uint32(in.fsid[1]))
			rec = ne.AppendUint32(rec, uint32(len(in.handle)))
			rec = ne.AppendUint32(rec, uint32(in.htype))
			rec = append(rec, in.handle...)
			if in.typ != unix.FAN_EVENT_INFO_TYPE_FID && in.typ != unix.FAN_EVENT_INFO_TYPE_DFID {
				rec = append(append(rec, in.name...), 0)
			}
		}
		for len(rec)%4 != 0 {
			rec = append(rec, 0)
		}
		ne.PutUint16(rec[2:], uint16(len(rec)))
		body = append(body, rec...)
	}
	out := ne.AppendUint32(nil, uint32(metadataLen+len(body)))
	out = append(out, unix.FANOTIFY_METADATA_VERSION, 0)
	out = ne.AppendUint16(out, metadataLen)
	out = ne.AppendUint64(out, mask)
	out = ne.AppendUint32(out, uint32(0xffffffff)) // FAN_NOFD
	out = ne.AppendUint32(out, uint32(pid))
	return append(out, body...)
}

func TestDecodeRecords(t *testing.T) {
	fs := fsid{7, -8}
	dirH := []byte{1, 0, 0, 0, 2, 0, 0, 0}
	objH := []byte{3, 0, 0, 0, 4, 0, 0, 0}
	newH := []byte{5, 0, 0, 0, 6, 0, 0, 0}
	create := testRecord(unix.FAN_CREATE|unix.FAN_ONDIR, 42, []info{
		{typ: unix.FAN_EVENT_INFO_TYPE_DFID_NAME, fsid: fs, htype: 1, handle: dirH, name: "sub dir"},
		{typ: unix.FAN_EVENT_INFO_TYPE_FID, fsid: fs, htype: 1, handle: objH},
	})
	rename := testRecord(unix.FAN_RENAME, 43, []info{
		{typ: unix.FAN_EVENT_INFO_TYPE_OLD_DFID_NAME, fsid: fs, htype: 1, handle: dirH, name: "a"},
		{typ: unix.FAN_EVENT_INFO_TYPE_NEW_DFID_NAME, fsid: fs, htype: 1, handle: newH, name: "bb"},
		{typ: unix.FAN_EVENT_INFO_TYPE_FID, fsid: fs, htype: 1, handle: objH},
	})
	self := testRecord(unix.FAN_ATTRIB|unix.FAN_ONDIR, 44, []info{
		{typ: unix.FAN_EVENT_INFO_TYPE_DFID_NAME, fsid: fs, htype: 1, handle: dirH, name: "."},
		{typ: unix.FAN_EVENT_INFO_TYPE_PIDFD, raw: []byte{9, 0, 0, 0}}, // not asked for: skipped
	})
	overflow := testRecord(unix.FAN_Q_OVERFLOW, 0, nil)
	buf := append(append(append(append([]byte{}, create...), rename...), self...), overflow...)

	var got []record
	for len(buf) > 0 {
		var r record
		n, err := decodeRecord(buf, &r)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
		buf = buf[n:]
	}
	if len(got) != 4 {
		t.Fatalf("%d records, want 4", len(got))
	}
	c := got[0]
	if c.mask != unix.FAN_CREATE|unix.FAN_ONDIR || c.pid != 42 || c.fsid != fs || !c.hasDir ||
		string(c.name) != "sub dir" || string(c.dir.bytes) != string(dirH) || string(c.obj.bytes) != string(objH) ||
		c.dir.typ != 1 || c.hasNew || c.isDot() {
		t.Errorf("create: %+v", c)
	}
	r := got[1]
	if r.pid != 43 || string(r.name) != "a" || string(r.dir.bytes) != string(dirH) ||
		!r.hasNew || string(r.newName) != "bb" || string(r.newDir.bytes) != string(newH) || string(r.obj.bytes) != string(objH) {
		t.Errorf("rename: %+v", r)
	}
	if s := got[2]; !s.isDot() || s.obj.ok() || s.pid != 44 {
		t.Errorf("event on a directory itself: %+v", s)
	}
	if o := got[3]; o.mask != unix.FAN_Q_OVERFLOW || o.hasDir || o.obj.ok() {
		t.Errorf("overflow: %+v", o)
	}
}

func TestDecodeRejectsMalformedRecords(t *testing.T) {
	good := testRecord(unix.FAN_MODIFY, 1, []info{
		{typ: unix.FAN_EVENT_INFO_TYPE_DFID_NAME, htype: 1, handle: []byte{1, 2, 3, 4, 5, 6, 7, 8}, name: "f"},
	})
	ne := binary.NativeEndian
	for name, mangle := range map[string]func(b []byte) []byte{
		"short":            func(b []byte) []byte { return b[:metadataLen-1] },
		"version":          func(b []byte) []byte { b[4] = 2; return b },
		"event_len past":   func(b []byte) []byte { ne.PutUint32(b, uint32(len(b)+4)); return b },
		"event_len small":  func(b []byte) []byte { ne.PutUint32(b, 8); return b },
		"metadata_len":     func(b []byte) []byte { ne.PutUint16(b[6:], 8); return b },
		"info len 0":       func(b []byte) []byte { ne.PutUint16(b[metadataLen+2:], 0); return b },
		"info len past":    func(b []byte) []byte { ne.PutUint16(b[metadataLen+2:], 200); return b },
		"handle_bytes big": func(b []byte) []byte { ne.PutUint32(b[metadataLen+12:], 100); return b },
	} {
		b := append([]byte(nil), good...)
		var r record
		if _, err := decodeRecord(mangle(b), &r); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}

func TestInoLayouts(t *testing.T) {
	ne := binary.NativeEndian
	ext4 := ne.AppendUint32(ne.AppendUint32(nil, 123456), 0)                             // ino, generation 0 (a root directory)
	xfs := ne.AppendUint32(ne.AppendUint64(nil, 1<<40|5), 7)                             // 64-bit ino, generation
	tmpfs := ne.AppendUint32(ne.AppendUint32(ne.AppendUint32(nil, 77), 1234), 1)         // generation, ino low, high
	btrfs := append(ne.AppendUint64(ne.AppendUint64(nil, 257), 5), 9, 0, 0, 0)           // objectid, root, generation
	ovl := append([]byte{0xfb, 1, 2, 3}, ne.AppendUint32(ne.AppendUint32(nil, 5), 6)...) // a layout of its own
	for _, c := range []struct {
		typ int32
		h   []byte
		ino uint64
	}{
		{1, ext4, 123456},
		{0x81, xfs, 1<<40 | 5},
		{1, tmpfs, 1<<32 | 1234},
		{0x4d, btrfs, 257},
		{0xf8, ovl, 0},
	} {
		if got := layoutOf(c.typ, len(c.h)).ino(c.h); got != c.ino {
			t.Errorf("handle %#x %x: ino %d, want %d", c.typ, c.h, got, c.ino)
		}
	}
}

func TestOpString(t *testing.T) {
	if s := (Create | Modify | CloseWrite).String(); s != "create|modify|close-write" {
		t.Errorf("%q", s)
	}
	if s := Op(0).String(); s != "none" {
		t.Errorf("%q", s)
	}
}
