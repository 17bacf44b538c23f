package witness

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/unix"
)

// The kernel's records, read with encoding/binary in native byte order
// (include/uapi/linux/fanotify.h):
//
//	struct fanotify_event_metadata {      // 24 bytes
//		__u32 event_len; __u8 vers; __u8 reserved; __u16 metadata_len;
//		__aligned_u64 mask; __s32 fd; __s32 pid;
//	};
//	struct fanotify_event_info_header { __u8 info_type; __u8 pad; __u16 len; };
//	struct fanotify_event_info_fid {      // FID, DFID, DFID_NAME, OLD/NEW_DFID_NAME
//		struct fanotify_event_info_header hdr;
//		__kernel_fsid_t fsid;              // two __s32
//		struct file_handle handle;         // __u32 handle_bytes; int handle_type; bytes
//		                                   // then, for *_NAME, the name and a NUL
//	};
const (
	metadataLen = 24
	infoHdrLen  = 4
	fidHdrLen   = infoHdrLen + 8 + 8 // header, fsid, handle_bytes and handle_type
)

// fsid is a filesystem's f_fsid as statfs and the kernel's records give it.
type fsid [2]int32

// handle is a file handle as a record carries it; bytes alias the read
// buffer.
type handle struct {
	typ   int32
	bytes []byte
}

func (h handle) ok() bool { return len(h.bytes) > 0 }

// record is one decoded event; its slices alias the read buffer and are
// valid until the next read.
type record struct {
	mask uint64
	pid  int32
	fsid fsid
	// obj is the object's handle (FAN_EVENT_INFO_TYPE_FID).
	obj handle
	// dir and name: the directory and the entry in it (DFID_NAME, DFID,
	// or OLD_DFID_NAME for a rename). A name of "." means the event is on
	// the directory itself.
	dir  handle
	name []byte
	// newDir and newName: where a rename moved the entry to (NEW_DFID_NAME).
	newDir  handle
	newName []byte
	hasDir  bool
	hasNew  bool
}

// decodeRecord decodes the first record of buf and returns its length.
// A record with an open descriptor (not sent in FID mode) has it closed.
func decodeRecord(buf []byte, r *record) (int, error) {
	if len(buf) < metadataLen {
		return 0, fmt.Errorf("short record: %d bytes", len(buf))
	}
	ne := binary.NativeEndian
	eventLen := int(ne.Uint32(buf[0:]))
	vers := buf[4]
	metaLen := int(ne.Uint16(buf[6:]))
	if vers != unix.FANOTIFY_METADATA_VERSION {
		return 0, fmt.Errorf("record version %d, want %d", vers, unix.FANOTIFY_METADATA_VERSION)
	}
	if eventLen < metadataLen || eventLen > len(buf) || metaLen < metadataLen || metaLen > eventLen {
		return 0, fmt.Errorf("record of %d bytes (metadata %d) in %d", eventLen, metaLen, len(buf))
	}
	*r = record{mask: ne.Uint64(buf[8:]), pid: int32(ne.Uint32(buf[20:]))}
	if fd := int32(ne.Uint32(buf[16:])); fd >= 0 {
		unix.Close(int(fd))
	}
	info := buf[metaLen:eventLen]
	for len(info) > 0 {
		if len(info) < infoHdrLen {
			return 0, fmt.Errorf("short info header: %d bytes", len(info))
		}
		typ := info[0]
		n := int(ne.Uint16(info[2:]))
		if n < infoHdrLen || n > len(info) {
			return 0, fmt.Errorf("info record of %d bytes in %d", n, len(info))
		}
		if err := r.addInfo(typ, info[:n]); err != nil {
			return 0, err
		}
		info = info[n:]
	}
	return eventLen, nil
}

func (r *record) addInfo(typ uint8, b []byte) error {
	switch typ {
	case unix.FAN_EVENT_INFO_TYPE_FID, unix.FAN_EVENT_INFO_TYPE_DFID,
		unix.FAN_EVENT_INFO_TYPE_DFID_NAME, unix.FAN_EVENT_INFO_TYPE_OLD_DFID_NAME,
		unix.FAN_EVENT_INFO_TYPE_NEW_DFID_NAME:
	default:
		return nil // pidfd, error, range, mount: not asked for
	}
	if len(b) < fidHdrLen {
		return fmt.Errorf("info record type %d of %d bytes", typ, len(b))
	}
	ne := binary.NativeEndian
	r.fsid = fsid{int32(ne.Uint32(b[4:])), int32(ne.Uint32(b[8:]))}
	size := int(ne.Uint32(b[12:]))
	if size > len(b)-fidHdrLen {
		return fmt.Errorf("file handle of %d bytes in a %d-byte record", size, len(b))
	}
	h := handle{typ: int32(ne.Uint32(b[16:])), bytes: b[fidHdrLen : fidHdrLen+size]}
	rest := b[fidHdrLen+size:]
	var name []byte
	if typ != unix.FAN_EVENT_INFO_TYPE_FID && typ != unix.FAN_EVENT_INFO_TYPE_DFID {
		end := 0
		for end < len(rest) && rest[end] != 0 {
			end++
		}
		name = rest[:end]
	}
	switch typ {
	case unix.FAN_EVENT_INFO_TYPE_FID:
		r.obj = h
	case unix.FAN_EVENT_INFO_TYPE_DFID:
		r.dir, r.name, r.hasDir = h, dotName, true
	case unix.FAN_EVENT_INFO_TYPE_DFID_NAME, unix.FAN_EVENT_INFO_TYPE_OLD_DFID_NAME:
		r.dir, r.name, r.hasDir = h, name, true
	case unix.FAN_EVENT_INFO_TYPE_NEW_DFID_NAME:
		r.newDir, r.newName, r.hasNew = h, name, true
	}
	return nil
}

var dotName = []byte(".")

// isDot says the record names a directory itself, not an entry in it.
func (r *record) isDot() bool { return len(r.name) == 1 && r.name[0] == '.' }
