package tracer

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/writewatch/writewatch/internal/ops"
)

// Bytes is a byte string as a recording keeps it: a JSON string when it
// is valid UTF-8, else {"base64": "..."}.
type Bytes []byte

// MarshalJSON writes b as a string, or base64 where it is not UTF-8.
func (b Bytes) MarshalJSON() ([]byte, error) {
	if utf8.Valid(b) {
		return json.Marshal(string(b))
	}
	return json.Marshal(struct {
		Base64 string `json:"base64"`
	}{base64.StdEncoding.EncodeToString(b)})
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (b *Bytes) UnmarshalJSON(data []byte) error {
	var s string
	if json.Unmarshal(data, &s) == nil {
		*b = Bytes(s)
		return nil
	}
	var enc struct {
		Base64 string `json:"base64"`
	}
	if err := json.Unmarshal(data, &enc); err != nil {
		return fmt.Errorf("tracer: bytes: %w", err)
	}
	raw, err := base64.StdEncoding.DecodeString(enc.Base64)
	*b = raw
	return err
}

// jsonEvent is an Event as a recording keeps it.
type jsonEvent struct {
	Kind      Kind      `json:"kind"`
	Op        ops.Op    `json:"op,omitempty"`
	BootNS    uint64    `json:"boot_ns"`
	Time      time.Time `json:"time"`
	TGID      uint32    `json:"tgid"`
	PID       uint32    `json:"pid,omitempty"`
	NSTGID    uint32    `json:"nstgid,omitempty"`
	PPID      uint32    `json:"ppid,omitempty"`
	Ret       int32     `json:"ret,omitempty"`
	Flags     uint32    `json:"flags,omitempty"`
	Mode      uint32    `json:"mode,omitempty"`
	Created   bool      `json:"created,omitempty"`
	Action    uint32    `json:"action,omitempty"`
	Comm      Bytes     `json:"comm,omitempty"`
	IOURing   bool      `json:"io_uring,omitempty"`
	Ino       uint64    `json:"ino,omitempty"`
	Dev       uint32    `json:"dev,omitempty"`
	Gen       uint32    `json:"gen,omitempty"`
	Test      uint64    `json:"test,omitempty"`
	Goid      uint64    `json:"goid,omitempty"`
	Go        uint32    `json:"go,omitempty"`
	Epoch     uint32    `json:"epoch,omitempty"`
	Why       Why       `json:"why,omitempty"`
	Unwatched bool      `json:"unwatched,omitempty"`
	Paused    bool      `json:"paused,omitempty"`
	// Prior is Event.Prior, when known.
	Prior     *jsonPrior `json:"prior,omitempty"`
	Device    uint32     `json:"device,omitempty"`
	OwnView   bool       `json:"own_view,omitempty"`
	Rewritten bool       `json:"rewritten,omitempty"`
	Mounts    uint32     `json:"mount_calls,omitempty"`
	// Slots are the record's strings, by Slot; Truncated the bits of
	// those cut short.
	Slots     map[Slot]Bytes `json:"slots,omitempty"`
	Truncated uint32         `json:"truncated,omitempty"`
}

// jsonPrior is a known Event.Prior.
type jsonPrior struct {
	Mode      uint32 `json:"mode"`
	UID       uint32 `json:"uid"`
	GID       uint32 `json:"gid"`
	MtimeSec  int64  `json:"mtime_sec"`
	MtimeNsec uint32 `json:"mtime_nsec"`
}

// MarshalJSON writes the record as a recording of a run keeps it (see
// internal/session's recordings), every field and slot included.
func (e *Event) MarshalJSON() ([]byte, error) {
	j := jsonEvent{
		Kind: e.Kind, Op: e.Op, BootNS: e.BootNS, Time: e.Time, TGID: e.TGID, PID: e.PID, NSTGID: e.NSTGID, PPID: e.PPID,
		Ret: e.Ret, Flags: e.Flags, Mode: e.Mode, Created: e.Created, Action: e.Action, Comm: e.Comm, IOURing: e.ViaIOUring,
		Ino: e.Ino, Dev: e.Dev, Gen: e.Gen, Test: e.Test, Goid: e.Goid, Go: e.Go, Epoch: e.Epoch, Why: e.Why,
		Unwatched: e.Unwatched, Paused: e.Paused, Device: e.Device, OwnView: e.OwnView, Mounts: e.MountCalls, Rewritten: e.Rewritten, Truncated: e.truncated,
	}
	if p := &e.Prior; p.Known {
		j.Prior = &jsonPrior{Mode: p.Mode, UID: p.UID, GID: p.GID, MtimeSec: p.MtimeSec, MtimeNsec: p.MtimeNsec}
	}
	for s := range Slot(nslots) {
		if e.Has(s) {
			if j.Slots == nil {
				j.Slots = map[Slot]Bytes{}
			}
			j.Slots[s] = e.slots[s]
		}
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (e *Event) UnmarshalJSON(data []byte) error {
	var j jsonEvent
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	*e = Event{
		Kind: j.Kind, Op: j.Op, BootNS: j.BootNS, Time: j.Time, TGID: j.TGID, PID: j.PID, NSTGID: j.NSTGID, PPID: j.PPID,
		Ret: j.Ret, Flags: j.Flags, Mode: j.Mode, Created: j.Created, Action: j.Action, Comm: j.Comm, ViaIOUring: j.IOURing,
		Ino: j.Ino, Dev: j.Dev, Gen: j.Gen, Test: j.Test, Goid: j.Goid, Go: j.Go, Epoch: j.Epoch, Why: j.Why,
		Unwatched: j.Unwatched, Paused: j.Paused, Device: j.Device, OwnView: j.OwnView, MountCalls: j.Mounts, Rewritten: j.Rewritten, truncated: j.Truncated,
	}
	if p := j.Prior; p != nil {
		e.Prior = Prior{Known: true, Mode: p.Mode, UID: p.UID, GID: p.GID, MtimeSec: p.MtimeSec, MtimeNsec: p.MtimeNsec}
	}
	for s, b := range j.Slots {
		if s < 0 || s >= nslots {
			return fmt.Errorf("tracer: record slot %d", s)
		}
		e.SetSlot(s, b)
	}
	return nil
}
