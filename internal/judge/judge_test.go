package judge

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/writewatch/writewatch/internal/allowlist"
	"github.com/writewatch/writewatch/internal/host"
	"github.com/writewatch/writewatch/internal/ops"
	"github.com/writewatch/writewatch/tracer"
	"golang.org/x/sys/unix"
)

func comps(names ...string) []byte {
	var b []byte
	for _, n := range names {
		b = append(append(b, n...), 0)
	}
	return b
}

func event(t *testing.T, op ops.Op, ret int32, flags uint32, slots ...[]byte) *tracer.Event {
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
	os.WriteFile(filepath.Join(dir, "real", "f"), nil, 0o644)
	os.Symlink("link/f", filepath.Join(dir, "flink"))
	os.Symlink("..", filepath.Join(dir, "real", "up"))

	checkTargets(t, []targetCase{
		{
			"relative open resolved by the kernel",
			event(t, ops.Open, 3, 0o1101, []byte("out.txt\x00"), comps("proj", "home"), nil, nil, comps("target", "elsewhere")),
			[]Verdict{{Op: "open", Path: "/elsewhere/target", Requested: "out.txt"}},
		},
		{
			"relative open: the kernel sends no directory, and the path is whole",
			event(t, ops.Open, 3, 0o1101, []byte("out.txt\x00"), nil, nil, nil, comps("out.txt", "proj")),
			[]Verdict{{Op: "open", Path: "/proj/out.txt", Requested: "out.txt"}},
		},
		{
			"failed open: the requested path, cleaned",
			event(t, ops.Open, -2, 0o101, []byte("a/../b.txt\x00"), comps("proj")),
			[]Verdict{{Op: "open", Path: "/proj/b.txt", Requested: "a/../b.txt"}},
		},
		{
			"an empty path that failed names nothing, not its start directory (os.Remove(\"\"))",
			event(t, ops.Unlink, -2, 0, []byte("\x00"), comps("proj", "home")),
			[]Verdict{{Op: "unlink", Path: "", Requested: ""}},
		},
		{
			"an empty path the kernel sent no slot for, that failed: nothing either, not /",
			event(t, ops.Unlink, -2, 0),
			[]Verdict{{Op: "unlink", Path: "", Requested: ""}},
		},
		{
			"an empty path that succeeded (AT_EMPTY_PATH) names its descriptor's file",
			event(t, ops.Chown, 0, 0, []byte("\x00"), comps("f", "proj")),
			[]Verdict{{Op: "chown", Path: "/proj/f", Requested: ""}},
		},
		{
			"O_TMPFILE judges its directory",
			event(t, ops.Open, 3, 0o20200002, []byte("/var/x\x00"), nil, nil, nil, comps("#1234", "x", "var")),
			[]Verdict{{Op: "open", Path: "/var/x", Requested: "/var/x"}},
		},
		{
			"rename judges both names",
			event(t, ops.Rename, 0, 0, []byte("old\x00"), comps("d"), []byte("/abs/new\x00")),
			[]Verdict{{Op: "rename", Role: "old", Path: "/d/old", Requested: "old"}, {Op: "rename", Role: "new", Path: "/abs/new", Requested: "/abs/new"}},
		},
		{
			"symlinked parent directory is followed",
			event(t, ops.Mkdir, 0, 0, []byte(filepath.Join(dir, "link", "sub")+"\x00")),
			[]Verdict{{Op: "mkdir", Path: filepath.Join(dir, "real", "sub"), Requested: filepath.Join(dir, "link", "sub")}},
		},
		{
			"chmod follows a symlink in the last component",
			event(t, ops.Chmod, 0, tracer.MetaFollow, []byte(filepath.Join(dir, "link", "..", "flink")+"\x00")),
			[]Verdict{{Op: "chmod", Path: filepath.Join(dir, "real", "f"), Requested: filepath.Join(dir, "link", "..", "flink")}},
		},
		{
			"lchmod does not",
			event(t, ops.Chmod, 0, 0, []byte(filepath.Join(dir, "flink")+"\x00")),
			[]Verdict{{Op: "chmod", Path: filepath.Join(dir, "flink"), Requested: filepath.Join(dir, "flink")}},
		},
		{
			"lchown follows a symlink for a slash after it",
			event(t, ops.Chown, 0, 0, []byte(filepath.Join(dir, "real", "up")+"/\x00")),
			[]Verdict{{Op: "chown", Path: dir, Requested: filepath.Join(dir, "real", "up") + "/"}},
		},
		{
			"unlink does not follow it for a slash after it",
			event(t, ops.Unlink, -21, 0, []byte(filepath.Join(dir, "real", "up")+"/\x00")),
			[]Verdict{{Op: "unlink", Path: filepath.Join(dir, "real", "up"), Requested: filepath.Join(dir, "real", "up") + "/"}},
		},
		{
			"relative path whose directory is missing is marked truncated",
			event(t, ops.Unlink, 0, 0, []byte("x\x00")),
			[]Verdict{{Op: "unlink", Path: "/x", Requested: "x", Truncated: true}},
		},
	})
}

type targetCase struct {
	name string
	ev   *tracer.Event
	want []Verdict
}

func checkTargets(t *testing.T, cases []targetCase) {
	t.Helper()
	j := Judge{host: host.Live{}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := j.written(tc.ev, nil)
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

// linkat with AT_SYMLINK_FOLLOW (ln -L) links the file a symlink in the
// source's last component points to; without it, the symlink itself.
func TestTargetsLinkFollow(t *testing.T) {
	dir := t.TempDir()
	dir, _ = filepath.EvalSymlinks(dir)
	os.WriteFile(filepath.Join(dir, "f"), nil, 0o644)
	os.Symlink("f", filepath.Join(dir, "flink"))
	src := []byte(filepath.Join(dir, "flink") + "\x00")
	newName := Verdict{Op: "link", Role: "new", Path: "/abs/h", Requested: "/abs/h"}
	checkTargets(t, []targetCase{
		{
			"AT_SYMLINK_FOLLOW",
			event(t, ops.Link, 0, unix.AT_SYMLINK_FOLLOW, src, nil, []byte("/abs/h\x00")),
			[]Verdict{{Op: "link", Role: "old", Path: filepath.Join(dir, "f"), Requested: filepath.Join(dir, "flink")}, newName},
		},
		{
			"no flag",
			event(t, ops.Link, 0, 0, src, nil, []byte("/abs/h\x00")),
			[]Verdict{{Op: "link", Role: "old", Path: filepath.Join(dir, "flink"), Requested: filepath.Join(dir, "flink")}, newName},
		},
	})
}

// truncate, and an open that failed, follow a symlink in the last
// component, as chmod does; not an open with O_NOFOLLOW or O_CREAT|O_EXCL.
func TestTargetsFollowLast(t *testing.T) {
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	os.Mkdir(filepath.Join(dir, "real"), 0o755)
	os.WriteFile(filepath.Join(dir, "real", "f"), nil, 0o644)
	os.Symlink("real/f", filepath.Join(dir, "flink"))
	os.Symlink("real/gone", filepath.Join(dir, "dangling"))

	checkTargets(t, []targetCase{
		{
			"truncate follows a symlink in the last component",
			event(t, ops.Truncate, 0, 0, []byte(filepath.Join(dir, "flink")+"\x00")),
			[]Verdict{{Op: "truncate", Path: filepath.Join(dir, "real", "f"), Requested: filepath.Join(dir, "flink")}},
		},
		{
			"an open that failed follows it",
			event(t, ops.Open, -13, unix.O_WRONLY|unix.O_TRUNC, []byte(filepath.Join(dir, "flink")+"\x00")),
			[]Verdict{{Op: "open", Path: filepath.Join(dir, "real", "f"), Requested: filepath.Join(dir, "flink")}},
		},
		{
			"but not with O_NOFOLLOW",
			event(t, ops.Open, -40, unix.O_WRONLY|unix.O_NOFOLLOW, []byte(filepath.Join(dir, "flink")+"\x00")),
			[]Verdict{{Op: "open", Path: filepath.Join(dir, "flink"), Requested: filepath.Join(dir, "flink")}},
		},
		{
			"nor with O_CREAT|O_EXCL",
			event(t, ops.Open, -17, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, []byte(filepath.Join(dir, "flink")+"\x00")),
			[]Verdict{{Op: "open", Path: filepath.Join(dir, "flink"), Requested: filepath.Join(dir, "flink")}},
		},
		{
			"a dangling link: the name it points to",
			event(t, ops.Open, -13, unix.O_WRONLY|unix.O_CREAT, []byte(filepath.Join(dir, "dangling")+"\x00")),
			[]Verdict{{Op: "open", Path: filepath.Join(dir, "real", "gone"), Requested: filepath.Join(dir, "dangling")}},
		},
	})
}

func TestOpenFlags(t *testing.T) {
	for flags, want := range map[uint32]string{
		0o1:        "O_WRONLY",
		0o1101:     "O_WRONLY|O_CREAT|O_TRUNC",
		0o2002:     "O_RDWR|O_APPEND",
		0o20200002: "O_RDWR|O_TMPFILE",
		0o300:      "O_RDONLY|O_CREAT|O_EXCL",
	} {
		if got := OpenFlags(flags); got != want {
			t.Errorf("OpenFlags(%#o) = %q, want %q", flags, got, want)
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
		if got := heldOpen(path); got != want {
			t.Errorf("heldOpen(%q) = %v, want %v", path, got, want)
		}
	}
}

// Record reports the paths outside the allowlist, the denied ones with
// the rule that denied them, cut paths, and allowed paths enforcement
// refused when nothing else explains the refusal.
func TestRecord(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "ww.yaml")
	if err := os.WriteFile(cfg, []byte("allow:\n  - /proj/**\ndeny:\n  - /proj/secret\ndefaults: false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	list, err := allowlist.Load(allowlist.Options{ConfigPath: cfg, WorkDir: "/proj", Home: "/home/u", Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	refused := func(ev *tracer.Event) *tracer.Event { ev.Action = tracer.ActionBlocked; return ev }
	type want struct {
		path, deniedBy, notEnforced string
		truncated                   bool
	}
	j := New(list, host.Live{})
	for _, tc := range []struct {
		name string
		ev   *tracer.Event
		want []want
	}{
		{"allowed", event(t, ops.Mkdir, 0, 0, []byte("/proj/build\x00")), nil},
		{"outside", event(t, ops.Mkdir, 0, 0, []byte("/etc/x\x00")), []want{{path: "/etc/x"}}},
		{"denied", event(t, ops.Mkdir, 0, 0, []byte("/proj/secret\x00")), []want{{path: "/proj/secret", deniedBy: cfg + ":4"}}},
		{"cut", event(t, ops.Unlink, 0, 0, []byte("x\x00")), []want{{path: "/x", truncated: true}}},
		{"allowed, but refused", refused(event(t, ops.Mkdir, -1, 0, []byte("/proj/build\x00"))),
			[]want{{path: "/proj/build", notEnforced: cfg + ":2"}}},
		{"refused for the path outside", refused(event(t, ops.Rename, -1, 0, []byte("/proj/a\x00"), nil, []byte("/etc/b\x00"))),
			[]want{{path: "/etc/b"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := j.Record(tc.ev)
			if len(got) != len(tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			for i, w := range tc.want {
				if got[i].Path != w.path || got[i].DeniedBy() != w.deniedBy || got[i].NotEnforced() != w.notEnforced || got[i].Truncated != w.truncated {
					t.Errorf("verdict %d: %+v (denied by %q, not enforced %q), want %+v", i, got[i], got[i].DeniedBy(), got[i].NotEnforced(), w)
				}
			}
		})
	}
}

// The judge reports the unlink of tests/x/../config.toml as the
// project's config.toml, which the allowlist protects.
func TestRecordSymlinkThenDotDot(t *testing.T) {
	proj := t.TempDir()
	proj, _ = filepath.EvalSymlinks(proj)
	if err := os.MkdirAll(filepath.Join(proj, "tests"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(".", filepath.Join(proj, "tests", "x")); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(proj, "ww.yaml")
	if err := os.WriteFile(cfg, []byte("allow:\n  - tests/**\ndefaults: false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	list, err := allowlist.Load(allowlist.Options{ConfigPath: cfg, WorkDir: proj, Home: "/home/u", Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	var dirSlot []string
	for d := proj; d != "/"; d = filepath.Dir(d) {
		dirSlot = append(dirSlot, filepath.Base(d))
	}
	got := New(list, host.Live{}).Record(event(t, ops.Unlink, 0, 0, []byte("tests/x/../config.toml\x00"), comps(dirSlot...)))
	if len(got) != 1 || got[0].Path != proj+"/config.toml" {
		t.Fatalf("verdicts %+v, want one for %s/config.toml", got, proj)
	}
}

// A hard link made from a descriptor the process holds is judged by the
// file Held finds behind it; without Held, or when Held finds no other
// name (an O_TMPFILE), only the new name is.
func TestHeldOpenLink(t *testing.T) {
	ev := event(t, ops.Link, 0, 0x400, []byte("/proc/self/fd/3\x00"), nil, []byte("/proj/tests/h\x00"))
	j := Judge{host: host.Live{}}
	if got := j.written(ev, nil); len(got) != 1 || got[0].Path != "/proj/tests/h" {
		t.Errorf("without Held: %+v", got)
	}
	var asked []string
	j.Held = func(_ *tracer.Event, fdPath, linkPath string) (string, bool) {
		asked = append(asked, fdPath, linkPath)
		return "/proj/config.toml", true
	}
	got := j.written(ev, nil)
	if len(got) != 2 || got[0].Path != "/proj/config.toml" || got[0].Role != "old" || got[0].Requested != "/proc/self/fd/3" ||
		got[1].Path != "/proj/tests/h" || got[1].Role != "new" {
		t.Errorf("with Held: %+v", got)
	}
	if len(asked) != 2 || asked[0] != "/proc/self/fd/3" || asked[1] != "/proj/tests/h" {
		t.Errorf("Held asked %q", asked)
	}
	j.Held = func(*tracer.Event, string, string) (string, bool) { return "", false }
	if got := j.written(ev, nil); len(got) != 1 {
		t.Errorf("Held finding nothing: %+v", got)
	}
}

// Under Landlock, an open or truncate that failed with EACCES through a
// symlink whose name the grants cover, to a file outside them, was
// refused by Landlock: Record marks it blocked. Not without Landlock, nor
// for a file inside the allowlist, nor for another error.
func TestRecordRefusedThroughSymlink(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"tests", "outside"} {
		if err := os.Mkdir(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"out": "../outside/f", "gone": "../outside/g", "in": "a"} {
		if err := os.Symlink(target, filepath.Join(dir, "tests", link)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "outside", "f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "ww.yaml")
	if err := os.WriteFile(cfg, []byte("allow:\n  - "+dir+"/tests/**\ndefaults: false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	list, err := allowlist.Load(allowlist.Options{ConfigPath: cfg, WorkDir: dir, Home: "/home/u", Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	path := func(name string) []byte { return []byte(filepath.Join(dir, "tests", name) + "\x00") }
	for _, tc := range []struct {
		name     string
		landlock bool
		ev       *tracer.Event
		blocked  bool
	}{
		{"truncate", true, event(t, ops.Truncate, -13, 0, path("out")), true},
		{"open", true, event(t, ops.Open, -13, unix.O_WRONLY, path("out")), true},
		{"without Landlock", false, event(t, ops.Truncate, -13, 0, path("out")), false},
		{"dangling", true, event(t, ops.Truncate, -13, 0, path("gone")), true},
		{"inside", true, event(t, ops.Truncate, -13, 0, path("in")), false},
		{"another error", true, event(t, ops.Truncate, -2, 0, path("out")), false},
		{"O_NOFOLLOW", true, event(t, ops.Open, -13, unix.O_WRONLY|unix.O_NOFOLLOW, path("out")), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := New(list, host.Live{})
			j.Landlock = tc.landlock
			got := j.Record(tc.ev)
			if blocked := tc.ev.Action&tracer.ActionBlocked != 0; blocked != tc.blocked {
				t.Errorf("blocked %v, want %v (verdicts %+v)", blocked, tc.blocked, got)
			}
		})
	}
}
