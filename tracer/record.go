package tracer

import (
	"unsafe"
)

// RecordHeader is the fixed part of every record the kernel sends
// (struct event_hdr in bpf/writewatch.h), in native byte order.
type RecordHeader = writewatchEventHdr

// Decode parses one raw record into ev without copying: ev's byte slices
// point into raw.
func Decode(raw []byte, ev *Event) error { return ev.decode(raw) }

// AppendRecord appends a record in the kernel's format to dst: h, then the
// slots in order. A nil slot is absent; h's Len and Present are set from
// the slots. It is the inverse of Decode, for tests and benchmarks.
func AppendRecord(dst []byte, h RecordHeader, slots ...[]byte) []byte {
	h.Present = 0
	for i := range h.Len {
		h.Len[i] = 0
		if i < len(slots) && slots[i] != nil {
			h.Len[i] = uint16(len(slots[i]))
			h.Present |= 1 << i
		}
	}
	dst = append(dst, unsafe.Slice((*byte)(unsafe.Pointer(&h)), hdrSize)...)
	for _, s := range slots {
		dst = append(dst, s...)
	}
	return dst
}

// SetComm stores a process name in h.
func (h *RecordHeader) SetComm(name string) {
	for i := range h.Comm {
		h.Comm[i] = 0
		if i < len(name) && i < len(h.Comm)-1 {
			h.Comm[i] = int8(name[i])
		}
	}
}
