package metaguard

import (
	"fmt"
	"slices"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/writewatch/writewatch/internal/ops"
)

func TestDecode(t *testing.T) {
	const dfd, path = 7, 0x1000
	for _, tc := range []struct {
		name string
		call string
		args [6]uint64
		want call
	}{
		{"chmod", "chmod", [6]uint64{path}, call{atFDCWD, path, true}},
		{"lchown", "lchown", [6]uint64{path}, call{atFDCWD, path, false}},
		{"fchmod", "fchmod", [6]uint64{dfd}, call{dfd, 0, false}},
		{"fchmodat", "fchmodat", [6]uint64{dfd, path}, call{dfd, path, true}},
		{"fchownat nofollow", "fchownat", [6]uint64{dfd, path, 0, 0, atSymlinkNofollow}, call{dfd, path, false}},
		{"utimensat nofollow", "utimensat", [6]uint64{dfd, path, 0, atSymlinkNofollow}, call{dfd, path, false}},
		{"utimensat on fd", "utimensat", [6]uint64{dfd, 0, 0, 0}, call{dfd, 0, true}},
		{"setxattrat", "setxattrat", [6]uint64{dfd, path, atSymlinkNofollow}, call{dfd, path, false}},
		{"file_setattr", "file_setattr", [6]uint64{dfd, path, 0x2000, 24, 0}, call{dfd, path, true}},
		{"file_setattr nofollow", "file_setattr", [6]uint64{dfd, path, 0x2000, 24, atSymlinkNofollow}, call{dfd, path, false}},
		{"file_setattr NULL path", "file_setattr", [6]uint64{dfd, 0, 0x2000, 24, atEmptyPath}, call{dfd, 0, true}},
		{"fremovexattr", "fremovexattr", [6]uint64{dfd}, call{dfd, 0, false}},
		{"ioctl", "ioctl", [6]uint64{dfd, 0x40086602, path}, call{dfd, 0, false}},
	} {
		if got, _ := decode(tc.call, tc.args); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// Every syscall of the list jumps to the notify return, and nothing
// jumps past the end, on every architecture.
func TestProgramJumps(t *testing.T) {
	for arch, audit := range map[string]uint32{"amd64": unix.AUDIT_ARCH_X86_64, "arm64": unix.AUDIT_ARCH_AARCH64} {
		prog, err := program(arch, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		nrs, err := syscalls(arch, nil)
		if err != nil {
			t.Fatal(err)
		}
		fchmodat2, _ := ops.Numbers(arch, []string{"fchmodat2"})
		removexattrat, _ := ops.Numbers(arch, []string{"removexattrat"})
		fileSetattr, _ := ops.Numbers(arch, []string{"file_setattr"})
		if !slices.Contains(nrs, fchmodat2[0]) || !slices.Contains(nrs, removexattrat[0]) ||
			!slices.Contains(nrs, fileSetattr[0]) {
			t.Errorf("%s: the filter's syscalls %v miss metadata changes", arch, nrs)
		}
		if prog[1].K != audit {
			t.Errorf("%s: the filter checks arch %#x, want %#x", arch, prog[1].K, audit)
		}
		notify := len(prog) - 1
		if prog[notify].K != unix.SECCOMP_RET_USER_NOTIF || prog[notify-1].K != unix.SECCOMP_RET_ALLOW {
			t.Fatalf("%s: the program must end with allow, notify: %+v", arch, prog[notify-1:])
		}
		if at := 1 + 1 + int(prog[1].Jf); prog[at].Code != unix.BPF_RET|unix.BPF_K || prog[at].K != unix.SECCOMP_RET_ALLOW {
			t.Errorf("%s: another architecture jumps to %d, %+v, want an allow", arch, at, prog[at])
		}
		ioctl, _ := ops.Numbers(arch, []string{"ioctl"})
		cmds := ops.Ioctls()
		for i, nr := range nrs {
			ins := prog[3+i]
			to := 3 + i + 1 + int(ins.Jt)
			if nr == ioctl[0] {
				// ioctl goes on to the check of its command.
				if ins.K != nr || prog[to].K != offArg1 || ins.Jf != 0 {
					t.Errorf("%s: ioctl: %+v does not jump to its commands", arch, ins)
				}
				for j, c := range cmds {
					at := to + 1 + j
					if ins := prog[at]; ins.K != c || at+1+int(ins.Jt) != notify || ins.Jf != 0 {
						t.Errorf("%s: ioctl command %#x: %+v does not jump to notify", arch, c, ins)
					}
				}
				if prog[to+1+len(cmds)].K != unix.SECCOMP_RET_ALLOW {
					t.Errorf("%s: another ioctl command is not allowed", arch)
				}
				continue
			}
			if ins.K != nr || to != notify || ins.Jf != 0 {
				t.Errorf("%s: syscall %d: %+v does not jump to notify", arch, nr, ins)
			}
			if name := ops.Name(arch, nr); name == "" {
				t.Errorf("%s: syscall %d has no name to decode", arch, nr)
			}
		}
	}
	if _, err := program("riscv64", false, nil); err == nil {
		t.Error("program must fail for an architecture it has no filter for")
	}
}

// With noURing, io_uring_setup fails with ENOSYS, and the rest of the
// filter is laid out as without it: its syscalls still go to notify.
func TestProgramRefusesIOURing(t *testing.T) {
	for _, arch := range []string{"amd64", "arm64"} {
		plain, err := program(arch, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		prog, err := program(arch, true, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(prog) != len(plain)+2 {
			t.Fatalf("%s: %d instructions, want %d", arch, len(prog), len(plain)+2)
		}
		uring, _ := ops.Numbers(arch, []string{"io_uring_setup"})
		nrs, _ := syscalls(arch, nil)
		at := 3 + len(nrs)
		if ins := prog[at]; ins.Code != unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K || ins.K != uring[0] || ins.Jt != 0 || ins.Jf != 1 {
			t.Errorf("%s: %+v, want a compare with io_uring_setup", arch, ins)
		}
		if ins := prog[at+1]; ins.Code != unix.BPF_RET|unix.BPF_K || ins.K != unix.SECCOMP_RET_ERRNO|uint32(unix.ENOSYS) {
			t.Errorf("%s: %+v, want ENOSYS", arch, ins)
		}
		if to := 2 + int(prog[1].Jf); prog[to].K != unix.SECCOMP_RET_ALLOW {
			t.Errorf("%s: another architecture jumps to %+v, want an allow", arch, prog[to])
		}
		notify := len(prog) - 1
		for i := range nrs {
			if ins := prog[3+i]; 3+i+1+int(ins.Jt) != notify && prog[3+i+1+int(ins.Jt)].K != offArg1 {
				t.Errorf("%s: syscall %d jumps to %d, not to notify or its commands", arch, ins.K, 3+i+1+int(ins.Jt))
			}
		}
	}
}

// A syscall the kernel lacks is left out of the filter, which is laid
// out as without it: it runs (ENOSYS), the others still go to notify.
func TestProgramLeavesOutAbsent(t *testing.T) {
	for _, arch := range []string{"amd64", "arm64"} {
		plain, err := program(arch, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		prog, err := program(arch, false, []string{"file_setattr"})
		if err != nil {
			t.Fatal(err)
		}
		if len(prog) != len(plain)-1 {
			t.Fatalf("%s: %d instructions, want %d", arch, len(prog), len(plain)-1)
		}
		nr, _ := ops.Numbers(arch, []string{"file_setattr"})
		nrs, _ := syscalls(arch, []string{"file_setattr"})
		if slices.Contains(nrs, nr[0]) || len(nrs) == 0 {
			t.Fatalf("%s: the filter's syscalls %v hold file_setattr (%d)", arch, nrs, nr[0])
		}
		notify := len(prog) - 1
		for i, ins := range prog {
			if ins.Code == unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K && ins.K == nr[0] {
				t.Errorf("%s: instruction %d compares with file_setattr", arch, i)
			}
		}
		for i := range nrs {
			ins := prog[3+i]
			if to := 3 + i + 1 + int(ins.Jt); to != notify && prog[to].K != offArg1 {
				t.Errorf("%s: syscall %d jumps to %d, not to notify or its commands", arch, ins.K, to)
			}
		}
	}
}

// Absent names the recent syscalls this kernel lacks, and no other:
// file_setattr came with Linux 6.17, setxattrat and removexattrat with
// 6.13.
func TestAbsentFollowsTheKernel(t *testing.T) {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		t.Fatal(err)
	}
	release := unix.ByteSliceToString(u.Release[:])
	var major, minor int
	if _, err := fmt.Sscanf(release, "%d.%d", &major, &minor); err != nil {
		t.Fatalf("kernel release %q: %v", release, err)
	}
	since := map[string][2]int{"setxattrat": {6, 13}, "removexattrat": {6, 13}, "file_setattr": {6, 17}}
	if len(since) != len(recent) {
		t.Fatalf("recent names %d syscalls, this test %d", len(recent), len(since))
	}
	got := Absent()
	for name, v := range since {
		lacks := major < v[0] || major == v[0] && minor < v[1]
		if slices.Contains(got, name) != lacks {
			t.Errorf("kernel %s: absent() = %v; %s came with %d.%d", release, got, name, v[0], v[1])
		}
	}
}
