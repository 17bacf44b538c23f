package ops

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/writewatch/writewatch/report"
	"golang.org/x/sys/unix"
)

// Every operation has a complete row, and no two share a name or a
// metric label.
func TestTableComplete(t *testing.T) {
	if z := table[0]; z.name != "" || z.kind != 0 || z.syscalls != nil || z.uring != nil || z.metric != "" {
		t.Error("table[0] must stay empty: enum ww_op starts at 1")
	}
	label := regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	names, metrics := map[string]bool{}, map[string]bool{}
	for _, o := range All() {
		r := table[o]
		if !label.MatchString(r.name) || !label.MatchString(r.metric) {
			t.Errorf("op %d: name %q, metric label %q: want lower-case words", o, r.name, r.metric)
		}
		if r.kind < Data || r.kind > Metadata {
			t.Errorf("%v: kind %v", o, r.kind)
		}
		if len(r.syscalls) == 0 {
			t.Errorf("%v: no syscall produces it", o)
		}
		if names[r.name] || metrics[r.metric] {
			t.Errorf("%v: name or metric label given twice", o)
		}
		names[r.name], metrics[r.metric] = true, true
		if got, ok := ByName(r.name); !ok || got != o {
			t.Errorf("ByName(%q) = %v, %v", r.name, got, ok)
		}
	}
	if len(All()) != Count || len(Names()) != Count {
		t.Errorf("All and Names must hold the %d operations", Count)
	}
	if z := table[0]; z.paths != nil || z.changes != 0 {
		t.Error("table[0] must stay empty")
	}
}

// Each row says what its operation does to each of its paths in a way
// the code that reads it can take: one path, or two with the roles old
// and new; effects that fit the role; a symlink followed in the first
// path alone (bpf/ops.h's WW_FOLLOW_*_OPS are of the first), and unseen
// only where it is followed; changes the witness can see.
func TestTablePaths(t *testing.T) {
	for _, o := range All() {
		ps := o.Paths()
		switch {
		case len(ps) == 1 && ps[0].Role != "" && ps[0].Role != report.RoleNew:
			t.Errorf("%v: the role of its one path is %q: want none, or new", o, ps[0].Role)
		case len(ps) == 2 && (ps[0].Role != report.RoleOld || ps[1].Role != report.RoleNew):
			t.Errorf("%v: roles %q, %q: want old, then new", o, ps[0].Role, ps[1].Role)
		case len(ps) < 1 || len(ps) > 2:
			t.Errorf("%v: %d paths: want one or two", o, len(ps))
		}
		for i, p := range ps {
			if p.Effect < Opens || p.Effect > Links {
				t.Errorf("%v: path %d: effect %d", o, i, p.Effect)
			}
			if role := map[Effect]string{Links: report.RoleOld, MovesAway: report.RoleOld, MovesOnto: report.RoleNew}[p.Effect]; role != "" && p.Role != role {
				t.Errorf("%v: path %d: effect %d needs the role %s", o, i, p.Effect, role)
			}
			if p.Effect == Opens && len(ps) != 1 {
				t.Errorf("%v: an open names one path", o)
			}
			if p.Follow > FollowAtFlag || (i > 0 && p.Follow != FollowNever) {
				t.Errorf("%v: path %d: follow rule %d (only the first path follows)", o, i, p.Follow)
			}
			if p.Unseen && p.Follow == FollowNever {
				t.Errorf("%v: path %d: unseen, and never followed", o, i)
			}
			if got := o.Path(p.Role); got != p {
				t.Errorf("%v: Path(%q) = %+v, want %+v", o, p.Role, got, p)
			}
		}
		if c := o.Changes(); c == 0 || c >= AttrsChanged<<1 {
			t.Errorf("%v: changes %#x", o, c)
		}
		if o.Opens() != (len(ps) == 1 && ps[0].Effect == Opens) {
			t.Errorf("%v: Opens disagrees with its path", o)
		}
	}
	if Rename.Path("") != (Path{}) || Op(99).Paths() != nil || Op(99).Changes() != 0 {
		t.Error("an operation has no path of a role it lacks, an unknown one none")
	}
}

func TestFollows(t *testing.T) {
	for _, c := range []struct {
		f     Follow
		flags uint32
		want  bool
	}{
		{FollowNever, ^uint32(0), false},
		{FollowAlways, 0, true},
		{FollowOpenFlags, unix.O_WRONLY | unix.O_CREAT, true},
		{FollowOpenFlags, unix.O_WRONLY | unix.O_NOFOLLOW, false},
		{FollowOpenFlags, unix.O_CREAT | unix.O_EXCL, false},
		{FollowOpenFlags, unix.O_EXCL, true},
		{FollowMetaFlag, MetaFollow, true},
		{FollowMetaFlag, unix.AT_SYMLINK_FOLLOW, false},
		{FollowAtFlag, unix.AT_SYMLINK_FOLLOW, true},
		{FollowAtFlag, MetaFollow, false},
	} {
		if got := (Path{Follow: c.f}).Follows(c.flags); got != c.want {
			t.Errorf("rule %d, flags %#x: %v, want %v", c.f, c.flags, got, c.want)
		}
	}
}

func TestOpMethods(t *testing.T) {
	if Open.String() != "open" || Mknod.String() != "mknod" || Op(99).String() != "op99" || Op(0).String() != "op0" {
		t.Error("String: wrong names")
	}
	if !Chmod.Metadata() || Open.Metadata() || Op(99).Metadata() {
		t.Error("Metadata: wrong kinds")
	}
	if Rename.Kind() != Namespace || Truncate.Kind() != Data || Kind(9).String() != "kind9" {
		t.Error("Kind: wrong kinds")
	}
	if _, ok := ByName("nope"); ok || Op(99).valid() || Op(0).valid() {
		t.Error("an unknown operation must be reported as such")
	}
	if Names()[Open-1] != "open" || Names()[Removexattr-1] != "removexattr" {
		t.Error("Names is not in the operations' order")
	}
	if got := Syscalls(0); len(slices.Compact(slices.Sorted(slices.Values(got)))) != len(got) {
		t.Error("Syscalls lists a syscall twice (unlinkat: unlink and rmdir)")
	}
}

// Every syscall of the table has a number on some architecture, and
// every architecture has the *at forms and clone.
func TestNumbersCoverTable(t *testing.T) {
	for _, name := range Syscalls(0) {
		if !known(name) {
			t.Errorf("%s: no number on any architecture", name)
		}
	}
	for arch := range numbers {
		if _, err := Numbers(arch, Syscalls(0)); err != nil {
			t.Error(err)
		}
		if _, ok := bpfArch[arch]; !ok {
			t.Errorf("%s: no BPF target name", arch)
		}
		for _, name := range []string{"openat", "unlinkat", "renameat2", "mkdirat", "linkat", "symlinkat",
			"mknodat", "fchmodat", "fchownat", "utimensat", "clone"} {
			if _, ok := numbers[arch][name]; !ok {
				t.Errorf("%s: no number for %s", arch, name)
			}
		}
	}
	if _, err := Numbers("vax", Syscalls(0)); err == nil {
		t.Error("Numbers must fail for an architecture it does not know")
	}
	if _, err := Numbers("amd64", []string{"nosuchcall"}); err == nil {
		t.Error("Numbers must fail for a syscall it does not know")
	}
	if nrs, err := Numbers("arm64", []string{"open", "openat"}); err != nil || len(nrs) != 1 || nrs[0] != 56 {
		t.Errorf("Numbers(arm64, open openat) = %v, %v: want [56] (arm64 has no open)", nrs, err)
	}
	if Name("arm64", 56) != "openat" || Name("amd64", 85) != "creat" || Name("arm64", 85) != "" {
		t.Error("Name does not invert the table")
	}
}

// bpf/ops.h is what go generate writes from the table.
func TestHeaderIsFresh(t *testing.T) {
	got, err := os.ReadFile("../../bpf/ops.h")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, CHeader()) {
		t.Error("bpf/ops.h differs from the table: run go generate ./internal/ops/ (or make generate) and commit it")
	}
}

// bpfSource is the hand-written C of the kernel side, bpf/ops.h aside.
func bpfSource(t *testing.T) []byte {
	t.Helper()
	var src []byte
	for _, pattern := range []string{"../../bpf/*.bpf.c", "../../bpf/*.h", "../../bpf/lib/*.h"} {
		files, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if filepath.Base(f) == "ops.h" {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			src = append(src, b...)
		}
	}
	return src
}

// names returns the distinct first submatches of re in src, sorted.
func names(re *regexp.Regexp, src []byte) []string {
	var out []string
	for _, m := range re.FindAllSubmatch(src, -1) {
		if s := string(m[1]); !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

// The C code that produces the operations agrees with the table: sys_enter
// has a case for every syscall of the table (and for nothing else but the
// fork family), and the io_uring program looks at exactly the table's
// opcodes.
func TestCodeProducesTable(t *testing.T) {
	src := bpfSource(t)
	fork := []string{"clone", "clone3", "fork", "vfork"}

	inCode := names(regexp.MustCompile(`\bcase NR_(\w+):`), src)
	want := append(Syscalls(0), fork...)
	for _, s := range want {
		if !slices.Contains(inCode, s) {
			t.Errorf("syscall %s: the table lists it, sys_enter has no case for it", s)
		}
	}
	for _, s := range inCode {
		if !slices.Contains(want, s) {
			t.Errorf("syscall %s: bpf/ has a case for it, the table lists it for no operation", s)
		}
	}

	var uring []string
	for _, o := range All() {
		for _, u := range table[o].uring {
			if !slices.Contains(uring, u) {
				uring = append(uring, u)
			}
		}
	}
	slices.Sort(uring)
	if got := names(regexp.MustCompile(`\b(IORING_OP_\w+)`), src); !slices.Equal(got, uring) {
		t.Errorf("io_uring opcodes in bpf/: %v; in the table: %v", got, uring)
	}
}

// handWritten are the places outside the table that tell operations
// apart by name, each for what no row says, as "file: the operation":
// what an operation is and does is read from its row, in Go
// (Op.Paths, Op.Changes, Op.Kind...) and in C (bpf/lib/rows.h, from
// the lists of bpf/ops.h); the code that produces an operation (a
// syscall's case, an io_uring opcode's) names it too.
var handWritten = []string{
	// The announcements of a test's start and end are opens that fail
	// (internal/attribution's protocol).
	"bpf/lib/write.h: OPEN",
	"internal/session/records.go: Open",
	// mmap returns an address, the record an errno.
	"bpf/lib/stash.h: MMAP",
	// io_uring's LINKAT carries linkat's flags: its producer reads them.
	"bpf/lib/uring.h: LINK",
	// Of a change of times, one of one time alone is seen by no
	// attribute event (its arguments tell, in utimensat's memory).
	"bpf/lib/pause.h: UTIMES",
	// How the summary names each role (TestRoleText in internal/render
	// keeps it in step with the table's roles).
	"internal/render/words.go: Rename",
	"internal/render/words.go: Link",
	"internal/render/words.go: Symlink",
	// A block device's node is made by mknod alone, told by its mode
	// (the LSM tier's path_mknod sees the mode, not the operation).
	"bpf/lib/write.h: MKNOD",
	"internal/judge/judge.go: Mknod",
}

// Nothing outside the table tells operations apart by name but the
// places of handWritten: a switch on operations would be a second home
// for what their rows say, which a new operation would miss.
func TestOperationsReadFromTable(t *testing.T) {
	var names []string
	for _, o := range All() {
		names = append(names, strings.ToUpper(o.String()))
	}
	cRe := regexp.MustCompile(`(?:[!=]= *WW_OP_(\w+)|WW_OP_(\w+) *[!=]=)`)
	goRe := regexp.MustCompile(`(?:[!=]= *ops\.(\w+)|case ops\.(\w+)|ops\.(\w+) *[!=]=)`)
	var got []string
	add := func(path string, re *regexp.Regexp, src []byte) {
		for _, m := range re.FindAllSubmatch(src, -1) {
			name := string(bytes.Join(m[1:], nil))
			if !slices.Contains(names, strings.ToUpper(name)) {
				continue // a kind, an effect: the row's own words
			}
			if e := path + ": " + name; !slices.Contains(got, e) {
				got = append(got, e)
			}
		}
	}
	root := "../.."
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		switch {
		case d.IsDir() && (rel == ".git" || rel == "bpf/include" || rel == "internal/ops" || rel == "testdata" ||
			strings.HasSuffix(rel, "/testdata")):
			return filepath.SkipDir
		case d.IsDir() || rel == "bpf/ops.h":
			return nil
		}
		var re *regexp.Regexp
		switch {
		case strings.HasSuffix(rel, ".h") || strings.HasSuffix(rel, ".c"):
			re = cRe
		case strings.HasSuffix(rel, ".go") && !strings.HasSuffix(rel, "_test.go"):
			re = goRe
		default:
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		add(filepath.ToSlash(rel), re, src)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range got {
		if !slices.Contains(handWritten, e) {
			t.Errorf("%s: tells operations apart by name: read what it asks from the table's rows instead (Op.Paths, Op.Changes, ...; bpf/lib/rows.h), or, for what no row can say, list it in handWritten", e)
		}
	}
	for _, e := range handWritten {
		if !slices.Contains(got, e) {
			t.Errorf("%s: no longer found: take it off handWritten", e)
		}
	}
}
