package metaguard

import (
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

func TestDecode(t *testing.T) {
	const dfd, path = 7, 0x1000
	for _, tc := range []struct {
		name string
		nr   int32
		args [6]uint64
		want call
	}{
		{"chmod", unix.SYS_CHMOD, [6]uint64{path}, call{atFDCWD, path, true}},
		{"lchown", unix.SYS_LCHOWN, [6]uint64{path}, call{atFDCWD, path, false}},
		{"fchmod", unix.SYS_FCHMOD, [6]uint64{dfd}, call{dfd, 0, false}},
		{"fchmodat", unix.SYS_FCHMODAT, [6]uint64{dfd, path}, call{dfd, path, true}},
		{"fchownat nofollow", unix.SYS_FCHOWNAT, [6]uint64{dfd, path, 0, 0, atSymlinkNofollow}, call{dfd, path, false}},
		{"utimensat nofollow", unix.SYS_UTIMENSAT, [6]uint64{dfd, path, 0, atSymlinkNofollow}, call{dfd, path, false}},
		{"utimensat on fd", unix.SYS_UTIMENSAT, [6]uint64{dfd, 0, 0, 0}, call{dfd, 0, true}},
		{"setxattrat", unix.SYS_SETXATTRAT, [6]uint64{dfd, path, atSymlinkNofollow}, call{dfd, path, false}},
		{"fremovexattr", unix.SYS_FREMOVEXATTR, [6]uint64{dfd}, call{dfd, 0, false}},
	} {
		if got, _ := decode(tc.nr, tc.args); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// Every syscall of the list jumps to the notify return, and nothing
// jumps past the end.
func TestProgramJumps(t *testing.T) {
	prog, err := program()
	if err != nil {
		t.Fatal(err)
	}
	nrs, err := syscalls()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(nrs, unix.SYS_FCHMODAT2) || !slices.Contains(nrs, unix.SYS_REMOVEXATTRAT) {
		t.Errorf("the filter's syscalls %v miss metadata changes", nrs)
	}
	notify := len(prog) - 1
	if prog[notify].K != unix.SECCOMP_RET_USER_NOTIF || prog[notify-1].K != unix.SECCOMP_RET_ALLOW {
		t.Fatalf("the program must end with allow, notify: %+v", prog[notify-1:])
	}
	if at := 1 + 1 + int(prog[1].Jf); at != notify-1 {
		t.Errorf("another architecture jumps to %d, want allow at %d", at, notify-1)
	}
	for i, nr := range nrs {
		ins := prog[3+i]
		if ins.K != nr || 3+i+1+int(ins.Jt) != notify || ins.Jf != 0 {
			t.Errorf("syscall %d: %+v does not jump to notify", nr, ins)
		}
	}
}
