package integration

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"unicode/utf8"

	"github.com/writewatch/writewatch/report"
)

var (
	spawnOnce sync.Once
	spawnBin  string
	spawnErr  error
)

// spawnHelper builds testdata/spawn.c, a C program that creates threads
// and processes through glibc (clone3, posix_spawn, vfork).
func spawnHelper(t *testing.T) string {
	spawnOnce.Do(func() {
		spawnBin = filepath.Join(binDir, "spawn")
		out, err := exec.Command("cc", "-O2", "-pthread", "-o", spawnBin, "testdata/spawn.c").CombinedOutput()
		if err != nil {
			spawnErr = fmt.Errorf("cc testdata/spawn.c (install gcc): %v\n%s", err, out)
		}
	})
	if spawnErr != nil {
		t.Fatal(spawnErr)
	}
	return spawnBin
}

// reset empties the project (but its config) and the outside directory.
func reset(t *testing.T, root, outside string) {
	t.Helper()
	for _, dir := range []string{root, outside} {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if e.Name() != ".writewatch.yaml" {
				must(t, os.RemoveAll(filepath.Join(dir, e.Name())))
			}
		}
	}
	must(t, os.MkdirAll(filepath.Join(root, "tests/sub"), 0o755))
}

type edgeCase struct {
	name  string
	setup func(t *testing.T, root, outside string)
	cmd   func(root, outside string) []string
	// want lists the violations, with ROOT and OUT standing for the two
	// directories; strace must agree unless strace cannot see the write.
	want     []key
	noStrace string // why strace cannot see it, when it cannot
}

func file(t *testing.T, path string) { writeFile(t, path, "precious\n") }

var edgeCases = []edgeCase{
	{
		name: "O_TMPFILE then linkat into the protected root",
		cmd: func(root, _ string) []string {
			return []string{opBin, "tmpfile-link", "/tmp", root + "/linked.txt"}
		},
		want: []key{{"link", "ROOT/linked.txt", "new"}},
	},
	{
		name: "renameat2 RENAME_EXCHANGE and RENAME_NOREPLACE",
		setup: func(t *testing.T, root, _ string) {
			file(t, root+"/a.txt")
			file(t, root+"/tests/b.txt")
			file(t, root+"/tests/c.txt")
		},
		cmd: func(root, _ string) []string {
			return []string{opBin, "rename-exchange", "tests/b.txt", "a.txt", ",", "rename-noreplace", "tests/c.txt", "new.txt"}
		},
		want: []key{{"rename", "ROOT/a.txt", "new"}, {"rename", "ROOT/new.txt", "new"}},
	},
	{
		name: "openat2 with RESOLVE_ flags",
		cmd: func(root, _ string) []string {
			return []string{opBin, "openat2", root + "/o2.txt", ",", "openat2", "tests/ok.txt"}
		},
		want: []key{{"open", "ROOT/o2.txt", ""}},
	},
	{
		name:  "reopening /proc/self/fd/N for writing",
		setup: func(t *testing.T, root, _ string) { file(t, root+"/pf.txt") },
		cmd:   func(root, _ string) []string { return []string{opBin, "proc-fd-write", "pf.txt"} },
		want:  []key{{"open", "ROOT/pf.txt", ""}},
	},
	{
		name:  "hard link made inside the allowlist to a protected file, then written through it",
		setup: func(t *testing.T, root, _ string) { file(t, root+"/prot.txt") },
		cmd: func(root, _ string) []string {
			return []string{opBin, "link", "prot.txt", "tests/h", ",", "append", "tests/h"}
		},
		want: []key{{"open", "ROOT/prot.txt", ""}},
	},
	{
		name: "a chain of symlinks ending outside",
		setup: func(t *testing.T, root, outside string) {
			file(t, outside+"/target")
			must(t, os.Symlink(outside+"/target", root+"/tests/l2"))
			must(t, os.Symlink("l2", root+"/tests/l1"))
		},
		cmd:  func(root, _ string) []string { return []string{opBin, "append", "tests/l1"} },
		want: []key{{"open", "OUT/target", ""}},
	},
	{
		name:  "a directory renamed while a process holds a dirfd to it",
		setup: func(t *testing.T, root, _ string) { must(t, os.Mkdir(root+"/tests/d", 0o755)) },
		cmd:   func(root, _ string) []string { return []string{opBin, "dirfd-rename", "tests/d", "moved", "x.txt"} },
		want:  []key{{"open", "ROOT/moved/x.txt", ""}, {"rename", "ROOT/moved", "new"}},
	},
	{
		name: "chdir and fchdir before relative writes",
		cmd: func(root, _ string) []string {
			return []string{opBin, "chdir", "tests/sub", ",", "write", "../../c1.txt", ",", "fchdir", root, ",", "write", "c2.txt"}
		},
		want: []key{{"open", "ROOT/c1.txt", ""}, {"open", "ROOT/c2.txt", ""}},
	},
	{
		name: "many threads writing at once",
		cmd:  func(root, _ string) []string { return []string{opBin, "threads", "16", root} },
		want: func() []key {
			var ks []key
			for i := range 16 {
				ks = append(ks, key{"open", fmt.Sprintf("ROOT/t%d.txt", i), ""})
			}
			return ks
		}(),
	},
	{
		name: "metadata changes by path and by fd",
		setup: func(t *testing.T, root, _ string) {
			file(t, root+"/m.txt")
			file(t, root+"/f.txt")
			file(t, root+"/tests/ok.txt")
		},
		cmd: func(root, _ string) []string {
			return []string{opBin, "chmod", "m.txt", ",", "fchmod", "f.txt", ",", "chown", "m.txt", ",", "utimes", "m.txt",
				",", "setxattr", "m.txt", ",", "chmod", "tests/ok.txt", ",", "fchmod", "tests/ok.txt"}
		},
		want: []key{{"chmod", "ROOT/f.txt", ""}, {"chmod", "ROOT/m.txt", ""}, {"chown", "ROOT/m.txt", ""},
			{"setxattr", "ROOT/m.txt", ""}, {"utimes", "ROOT/m.txt", ""}},
	},
	{
		name: "memfd, pipe and socket are not files",
		cmd:  func(root, _ string) []string { return []string{opBin, "memfd"} },
		want: nil,
	},
	{
		name: "io_uring requests",
		cmd: func(root, _ string) []string {
			return []string{opBin, "uring-openat", root + "/u.txt", ",", "uring-mkdirat", "ud"}
		},
		want:     []key{{"mkdir", "ROOT/ud", ""}, {"open", "ROOT/u.txt", ""}},
		noStrace: "io_uring requests make no syscall of their own",
	},
}

// Each edge case caught exactly as docs/edge-cases.md says, and exactly
// as strace shows it, where strace can see it.
func TestEdgeCases(t *testing.T) {
	root, outside := project(t)
	for _, tc := range edgeCases {
		t.Run(tc.name, func(t *testing.T) {
			expand := func(ks []key) []key {
				var out []key
				for _, k := range ks {
					k.path = strings.NewReplacer("ROOT", root, "OUT", outside).Replace(k.path)
					out = append(out, k)
				}
				slices.SortFunc(out, func(a, b key) int { return strings.Compare(a.String(), b.String()) })
				return out
			}
			want := expand(tc.want)
			prepare := func() {
				reset(t, root, outside)
				if tc.setup != nil {
					tc.setup(t, root, outside)
				}
			}

			prepare()
			res := ww(t, root, []string{"--audit"}, tc.cmd(root, outside)...)
			if res.code != 0 {
				t.Fatalf("exit code %d\n%s", res.code, res.stderr)
			}
			if got := keys(res.rep); !slices.Equal(got, want) {
				t.Errorf("writewatch:\n got %v\nwant %v\n%s", got, want, res.stderr)
			}

			prepare()
			truth := straceWrites(t, root, tc.cmd(root, outside)...)
			switch {
			case tc.noStrace == "" && !slices.Equal(truth, want):
				t.Errorf("strace shows %v, writewatch must show the same; want %v", truth, want)
			case tc.noStrace != "" && len(truth) != 0:
				t.Errorf("strace was expected to miss these (%s), but shows %v", tc.noStrace, truth)
			}
		})
	}
}

// glibc's threads and processes: pthread_create and posix_spawn (clone3)
// and vfork, each writing.
func TestCloneThreeAndVfork(t *testing.T) {
	root, _ := project(t)
	spawn := spawnHelper(t)
	res := ww(t, root, nil, spawn, "th.txt", root+"/ch.txt")
	want := []key{{"open", root + "/ch.txt", ""}, {"open", root + "/ch.txt.vfork", ""}, {"open", root + "/th.txt", ""}}
	if got := keys(res.rep); !slices.Equal(got, want) {
		t.Fatalf("violations:\n got %v\nwant %v\n%s", got, want, res.stderr)
	}
	if truth := straceWrites(t, root, spawn, "th.txt", root+"/ch.txt"); !slices.Equal(truth, want) {
		t.Errorf("strace shows %v", truth)
	}
}

// Names with spaces, newlines and bytes that are not UTF-8 are reported
// whole; JSON shows invalid bytes as U+FFFD, the text summary escapes them.
func TestOddNames(t *testing.T) {
	root, _ := project(t)
	names := []string{"with space.txt", "new\nline.txt", "bad\xff\xfe.txt"}
	args := []string{opBin}
	for i, n := range names {
		if i > 0 {
			args = append(args, ",")
		}
		args = append(args, "write", n)
	}
	res := ww(t, root, nil, args...)
	var want []key
	for _, n := range names {
		want = append(want, key{"open", filepath.Join(root, eachInvalidByte(n)), ""})
	}
	slices.SortFunc(want, func(a, b key) int { return strings.Compare(a.String(), b.String()) })
	if got := keys(res.rep); !slices.Equal(got, want) {
		t.Fatalf("violations:\n got %q\nwant %q", got, want)
	}
	if !strings.Contains(res.stderr, `\xff\xfe`) || !strings.Contains(res.stderr, `new\nline.txt`) {
		t.Errorf("text summary should escape odd bytes:\n%s", res.stderr)
	}
}

// 200 nested directories with short names still fit: the path is whole.
func TestDeepDirectories(t *testing.T) {
	root, _ := project(t)
	res := ww(t, root, nil, opBin, "deep", "200", "d", ",", "write", "f.txt")
	want := root + strings.Repeat("/d", 200) + "/f.txt"
	v := violation(res.rep, "open", want)
	if v == nil || v.Truncated {
		t.Fatalf("deep write not reported whole: %v", keys(res.rep))
	}
	if n := len(res.rep.Violations); n != 201 {
		t.Errorf("%d violations, want 200 mkdirs and the open", n)
	}
}

// 16 processes each opening a file outside the allowlist 100,000 times at
// once: every open is counted, or the loss is reported exactly.
func TestManyProcessesWritingAtOnce(t *testing.T) {
	root, outside := project(t)
	target := filepath.Join(outside, "load.txt")
	file(t, target)
	const procs, each = 16, 100000
	script := fmt.Sprintf(`for i in $(seq %d); do %s repeat %d %s & done; wait`, procs, opBin, each, target)
	res := ww(t, root, []string{"--audit"}, "sh", "-c", script)
	if res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	v := violation(res.rep, "open", target)
	if v == nil {
		t.Fatalf("no violation for %s: %v", target, keys(res.rep))
	}
	if got := uint64(v.Count) + res.rep.LostWrites; got != procs*each {
		data, _ := json.Marshal(res.rep.Lost)
		t.Errorf("counted %d + lost writes %d = %d, want %d (lost by cause %s)", v.Count, res.rep.LostWrites, got, procs*each, data)
	}
	t.Logf("counted %d, lost writes %d, lost in all %d", v.Count, res.rep.LostWrites, res.rep.LostEvents)
}

// eachInvalidByte replaces every byte that is not valid UTF-8 with U+FFFD,
// as the JSON report does.
func eachInvalidByte(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// An ia32 program's syscalls are not read with x86-64's numbers: its
// fork (ia32 syscall 2, x86-64's open) is neither reported as an open
// nor, under --enforce's kill tier, a reason to kill it.
func TestIA32SyscallsAreNotMisread(t *testing.T) {
	requireRoot(t)
	bin := filepath.Join(t.TempDir(), "fork32")
	if out, err := exec.Command("cc", "-m32", "-nostdlib", "-static", "-fno-pic", "-O1", "-o", bin, "testdata/fork32.c").CombinedOutput(); err != nil {
		t.Fatalf("cc -m32 testdata/fork32.c (install gcc): %v\n%s", err, out)
	}
	// Some kernels are built with ia32 emulation but have it switched off
	// (ia32_emulation=off, or by the hypervisor): no ia32 syscall can be
	// made there, so there is nothing to misread.
	if err := exec.Command(bin).Run(); errors.Is(err, syscall.ENOEXEC) {
		t.Skipf("this kernel does not run 32-bit x86 programs (%v)", err)
	}
	root, _ := project(t)
	for _, flags := range [][]string{nil, {"--enforce", "--enforce-with", "kill"}} {
		res := ww(t, root, flags, bin)
		if res.code != 0 || len(res.rep.Violations) != 0 {
			t.Errorf("%v: exit %d, %d violations, want 0 and none\n%s", flags, res.code, len(res.rep.Violations), res.stderr)
		}
		if res.rep.Processes != 2 {
			t.Errorf("%v: %d processes traced, want 2 (the ia32 fork is still followed)", flags, res.rep.Processes)
		}
	}
}

// Outside --enforce, writewatch's io_uring program loads while COMMAND
// starts. A ring the tree sets up before it is attached pauses its
// process until it is, so a request made as early as a program can make
// one (testdata/uringfirst.c, by raw syscalls) is still seen, via
// io_uring. A request through a ring from outside the tree (inherited)
// made before it is attached is either seen or makes the run
// incomplete, never neither. As a normal user with CAP_BPF and
// CAP_PERFMON the filesystem witness is off, so no pause for file
// contents stands in for the io_uring one, nor a change on disk for a
// request unseen.
func TestURingBeforeItsProgram(t *testing.T) {
	u := makeUser(t)
	root, bin := userProject(t, u)
	ww := filepath.Join(bin, "writewatch")
	copyFile(t, wwBin, ww)
	helper := filepath.Join(bin, "uringfirst")
	if out, err := exec.Command("cc", "-O2", "-o", helper, "testdata/uringfirst.c").CombinedOutput(); err != nil {
		t.Fatalf("cc testdata/uringfirst.c (install gcc): %v\n%s", err, out)
	}
	caps := []string{"--inh-caps=+bpf,+perfmon", "--ambient-caps=+bpf,+perfmon"}
	jsonPath := filepath.Join(root, "tests", "report.json")
	for i := range 3 {
		code, stderr := runAs(t, u, root, u.env(), caps, ww, "--audit", "--json", jsonPath, "--", helper, "u.txt")
		rep := readReport(t, jsonPath)
		if v := violation(rep, "open", root+"/u.txt"); code != 0 || v == nil || v.Via != report.ViaIOUring {
			t.Errorf("run %d: exit %d, open of u.txt %+v, want exit 0 and one via io_uring\n%s", i, code, v, stderr)
		}
		if len(rep.Incomplete) > 0 {
			t.Errorf("run %d: incomplete: %q", i, rep.Incomplete)
		}
		must(t, os.Remove(filepath.Join(root, "u.txt")))
	}
	for i := range 3 {
		code, stderr := runAs(t, u, root, u.env(), caps, helper, "ring", "-", ww, "--audit", "--json", jsonPath, "--", helper, "enter", "v.txt")
		rep := readReport(t, jsonPath)
		v := violation(rep, "open", root+"/v.txt")
		seen := v != nil && v.Via == report.ViaIOUring
		unseen := slices.ContainsFunc(rep.Incomplete, func(s string) bool {
			return strings.Contains(s, "io_uring call of the tree came before writewatch's io_uring program was attached")
		})
		if _, err := os.Stat(filepath.Join(root, "v.txt")); err != nil || code != 0 || !seen && !unseen {
			t.Errorf("run %d: exit %d, v.txt %v, open %+v, incomplete %q: want exit 0, the file made, and its open seen via io_uring or the run incomplete for it\n%s",
				i, code, err, v, rep.Incomplete, stderr)
		}
		os.Remove(filepath.Join(root, "v.txt"))
	}
}
