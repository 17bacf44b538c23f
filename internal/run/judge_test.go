package run

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/writewatch/writewatch/internal/tracer"
)

func comps(names ...string) []byte {
	var b []byte
	for _, n := range names {
		b = append(append(b, n...), 0)
	}
	return b
}

func event(t *testing.T, op tracer.Op, ret int32, flags uint32, slots ...[]byte) *tracer.Event {
	t.Helper()
	var ev tracer.Event
	h := tracer.RecordHeader{Kind: uint32(tracer.KindWrite), Op: uint32(op), Ret: ret, Flags: flags}
	if err := tracer.Decode(tracer.AppendRecord(nil, h, slots...), &ev); err != nil {
		t.Fatal(err)
	}
	return &ev
}

func TestTargets(t *testing.T) {
	// A real directory with a symlink, for the parent resolution.
	dir := t.TempDir()
	dir, _ = filepath.EvalSymlinks(dir)
	os.Mkdir(filepath.Join(dir, "real"), 0o755)
	os.Symlink(filepath.Join(dir, "real"), filepath.Join(dir, "link"))

	var j judge
	for _, tc := range []struct {
		name string
		ev   *tracer.Event
		want []target
	}{
		{
			"relative open resolved by the kernel",
			event(t, tracer.OpOpen, 3, 0o1101, []byte("out.txt\x00"), comps("proj", "home"), nil, nil, comps("target", "elsewhere")),
			[]target{{op: "open", path: "/elsewhere/target", requested: "out.txt"}},
		},
		{
			"relative open: the kernel sends no directory, and the path is whole",
			event(t, tracer.OpOpen, 3, 0o1101, []byte("out.txt\x00"), nil, nil, nil, comps("out.txt", "proj")),
			[]target{{op: "open", path: "/proj/out.txt", requested: "out.txt"}},
		},
		{
			"failed open: the requested path, cleaned",
			event(t, tracer.OpOpen, -2, 0o101, []byte("a/../b.txt\x00"), comps("proj")),
			[]target{{op: "open", path: "/proj/b.txt", requested: "a/../b.txt"}},
		},
		{
			"O_TMPFILE judges its directory",
			event(t, tracer.OpOpen, 3, 0o20200002, []byte("/var/x\x00"), nil, nil, nil, comps("#1234", "x", "var")),
			[]target{{op: "open", path: "/var/x", requested: "/var/x"}},
		},
		{
			"rename judges both names",
			event(t, tracer.OpRename, 0, 0, []byte("old\x00"), comps("d"), []byte("/abs/new\x00")),
			[]target{{op: "rename", role: "old", path: "/d/old", requested: "old"}, {op: "rename", role: "new", path: "/abs/new", requested: "/abs/new"}},
		},
		{
			"symlinked parent directory is followed",
			event(t, tracer.OpMkdir, 0, 0, []byte(filepath.Join(dir, "link", "sub")+"\x00")),
			[]target{{op: "mkdir", path: filepath.Join(dir, "real", "sub"), requested: filepath.Join(dir, "link", "sub")}},
		},
		{
			"relative path whose directory is missing is marked truncated",
			event(t, tracer.OpUnlink, 0, 0, []byte("x\x00")),
			[]target{{op: "unlink", path: "/x", requested: "x", truncated: true}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := j.targets(tc.ev, nil)
			if len(got) != len(tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("target %d: got %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestOpenFlags(t *testing.T) {
	for flags, want := range map[uint32]string{
		0o1:        "O_WRONLY",
		0o1101:     "O_WRONLY|O_CREAT|O_TRUNC",
		0o2002:     "O_RDWR|O_APPEND",
		0o20200002: "O_RDWR|O_TMPFILE",
		0o300:      "O_RDONLY|O_CREAT|O_EXCL",
	} {
		if got := openFlags(flags); got != want {
			t.Errorf("openFlags(%#o) = %q, want %q", flags, got, want)
		}
	}
}

func TestHeldOpen(t *testing.T) {
	for path, want := range map[string]bool{
		"":                       true,
		"/proc/self/fd/3":        true,
		"/proc/1234/fd/10":       true,
		"/proc/thread-self/fd/4": true,
		"/proc/self/fd/":         false,
		"/proc/self/fdinfo/3":    false,
		"/proc/self/fd/3/x":      false,
		"/home/u/file":           false,
		"/proc/abc/fd/3":         false,
	} {
		if got := HeldOpen(path); got != want {
			t.Errorf("HeldOpen(%q) = %v, want %v", path, got, want)
		}
	}
}
