package tracer

import (
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cilium/ebpf/btf"

	"github.com/writewatch/writewatch/internal/ops"
)

// comps builds a directory slot: components innermost first, each
// NUL-terminated, the way the kernel walks a path upward.
func comps(names ...string) []byte {
	var b []byte
	for _, n := range names {
		b = append(append(b, n...), 0)
	}
	return b
}

func TestDecodeRoundTrip(t *testing.T) {
	h := RecordHeader{Ts: 42, Kind: uint32(KindWrite), Op: uint32(ops.Rename), Tgid: 100, Pid: 101, NsTgid: 7, Ppid: 99, Ret: -2, Flags: 0o101, Truncated: 1 << SlotDir2}
	h.SetComm("go-test-binary-with-a-long-name")
	raw := AppendRecord(nil, h, []byte("old.txt\x00"), comps("proj", "home"), []byte("/abs/new.txt\x00"), nil, nil)

	var ev Event
	if err := Decode(raw, &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Kind != KindWrite || ev.Op != ops.Rename || ev.TGID != 100 || ev.PID != 101 || ev.NSTGID != 7 || ev.PPID != 99 || ev.Ret != -2 || ev.Flags != 0o101 || ev.BootNS != 42 {
		t.Errorf("header decoded wrong: %+v", ev)
	}
	if got := string(ev.Comm); got != "go-test-binary-" {
		t.Errorf("comm %q, want the first 15 bytes", got)
	}
	if ev.String(SlotPath) != "old.txt" || ev.String(SlotPath2) != "/abs/new.txt" {
		t.Errorf("paths %q %q", ev.String(SlotPath), ev.String(SlotPath2))
	}
	if !ev.Has(SlotDir) || ev.Has(SlotDir2) || ev.Has(SlotResolved) {
		t.Errorf("present bits wrong: dir %v dir2 %v resolved %v", ev.Has(SlotDir), ev.Has(SlotDir2), ev.Has(SlotResolved))
	}
	if ev.Truncated(SlotDir) || !ev.Truncated(SlotDir2) {
		t.Error("truncated bits wrong")
	}
	if got := string(ev.AppendDir(nil, SlotDir)); got != "/home/proj" {
		t.Errorf("dir %q, want /home/proj", got)
	}
	if ev.Prior.Known {
		t.Errorf("a record without WW_REC_PRIOR says what its call found: %+v", ev.Prior)
	}
	// Failed: its repeats are counted apart from a success's.
	failed := Event{Ino: 9, Ret: -2, Flags: 0o101}
	if k, _ := failed.RepeatKey(); k.Flags != 0o101|repeatFailed {
		t.Errorf("repeat key flags %#o, want the failed bit", k.Flags)
	}
}

// What a call found before it changed its file (WW_REC_PRIOR) is decoded,
// and kept by a recording.
func TestDecodePrior(t *testing.T) {
	h := RecordHeader{Kind: uint32(KindWrite), Op: uint32(ops.Chmod), Tgid: 100, Rec: uint16(writewatchWwRecWW_REC_PRIOR),
		PriorMode: 0o40755, PriorUid: 1000, PriorGid: 100, PriorMtimeSec: 1700000000, PriorMtimeNsec: 5}
	raw := AppendRecord(nil, h, []byte("d\x00"), nil, nil, nil, nil)
	var ev Event
	if err := Decode(raw, &ev); err != nil {
		t.Fatal(err)
	}
	want := Prior{Known: true, Mode: 0o40755, UID: 1000, GID: 100, MtimeSec: 1700000000, MtimeNsec: 5}
	if ev.Prior != want {
		t.Errorf("prior %+v, want %+v", ev.Prior, want)
	}
	data, err := ev.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var back Event
	if err := back.UnmarshalJSON(data); err != nil {
		t.Fatal(err)
	}
	if back.Prior != want {
		t.Errorf("after a recording: %+v, want %+v", back.Prior, want)
	}
}

func TestDecodeRejectsBadRecords(t *testing.T) {
	var ev Event
	if err := Decode(make([]byte, 10), &ev); err == nil {
		t.Error("short record accepted")
	}
	raw := AppendRecord(nil, RecordHeader{}, []byte("abc\x00"))
	if err := Decode(raw[:len(raw)-2], &ev); err == nil {
		t.Error("record with an overrunning slot accepted")
	}
}

func TestAppendDir(t *testing.T) {
	for _, tc := range []struct {
		slot []byte
		want string
	}{
		{nil, "/"},
		{comps("etc"), "/etc"},
		{comps("c", "b", "a"), "/a/b/c"},
		{comps("with space", "new\nline"), "/new\nline/with space"},
	} {
		raw := AppendRecord(nil, RecordHeader{}, nil, tc.slot)
		var ev Event
		if err := Decode(raw, &ev); err != nil {
			t.Fatal(err)
		}
		if got := string(ev.AppendDir([]byte("x"), SlotDir)); got != "x"+tc.want {
			t.Errorf("AppendDir(%q) = %q, want %q", tc.slot, got, "x"+tc.want)
		}
	}
}

func TestExecArgs(t *testing.T) {
	raw := AppendRecord(nil, RecordHeader{Kind: uint32(KindExec)}, []byte("/bin/sh\x00"), []byte("sh\x00-c\x00echo hi\x00"))
	var ev Event
	if err := Decode(raw, &ev); err != nil {
		t.Fatal(err)
	}
	if got := ev.Args(); !slices.Equal(got, []string{"sh", "-c", "echo hi"}) {
		t.Errorf("args %q", got)
	}
}

// The object's enum ww_op, as compiled, is the table of operations: its
// enumerators are WW_OP_<NAME> with each operation's value.
func TestObjectOpsAreTheTable(t *testing.T) {
	spec, err := loadWritewatch()
	if err != nil {
		t.Fatal(err)
	}
	var enum *btf.Enum
	if err := spec.Types.TypeByName("ww_op", &enum); err != nil {
		t.Fatal(err)
	}
	got := map[string]uint64{}
	for _, v := range enum.Values {
		got[v.Name] = v.Value
	}
	for _, o := range ops.All() {
		name := "WW_OP_" + strings.ToUpper(o.String())
		if v, ok := got[name]; !ok || v != uint64(o) {
			t.Errorf("%s: %d in the object (present: %v), %d in the table", name, v, ok, o)
		}
		delete(got, name)
	}
	for name := range got {
		t.Errorf("%s: in the object, not in the table", name)
	}
	if MetaFollow != ops.MetaFollow {
		t.Errorf("WW_META_FOLLOW is %#x in the object, %#x in the table", MetaFollow, ops.MetaFollow)
	}
}

// BenchmarkDecode measures turning one typical write record into an
// Event and its absolute directory: the per-event cost in user space.
func BenchmarkDecode(b *testing.B) {
	h := RecordHeader{Kind: uint32(KindWrite), Op: uint32(ops.Open), Tgid: 1, Flags: 0o1101}
	raw := AppendRecord(nil, h, []byte("out/report.json\x00"), comps("project", "src", "dev", "home"), nil, nil,
		comps("report.json", "out", "project", "src", "dev", "home"))
	var ev Event
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	for b.Loop() {
		if err := Decode(raw, &ev); err != nil {
			b.Fatal(err)
		}
		buf = ev.AppendDir(buf[:0], SlotResolved)
	}
}

// The flags of exec and contents records are #defines in writewatch.h,
// which leave no trace in the object's BTF: each Go constant is checked
// against the header's text.
func TestRecordFlagsAreTheHeaders(t *testing.T) {
	data, err := os.ReadFile("../bpf/writewatch.h")
	if err != nil {
		t.Fatal(err)
	}
	defines := map[string]uint64{}
	for _, m := range regexp.MustCompile(`(?m)^#define (WW_\w+) (\d+)`).FindAllStringSubmatch(string(data), -1) {
		v, _ := strconv.ParseUint(m[2], 10, 32)
		defines[m[1]] = v
	}
	for name, got := range map[string]uint64{
		"WW_EXEC_STOPPED":     ExecStopped,
		"WW_EXEC_CONTENTS":    ExecContents,
		"WW_EXEC_PREPARED":    ExecPrepared,
		"WW_CONTENTS_STOPPED": ContentsStopped,
	} {
		want, ok := defines[name]
		if !ok || got != want {
			t.Errorf("%s: Go says %d, writewatch.h %d (defined: %v)", name, got, want, ok)
		}
	}
}
