package main

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// creat calls the creat syscall itself; unix.Creat uses open.
func creat(a []string) error {
	p, err := unix.BytePtrFromString(a[0])
	if err != nil {
		return err
	}
	fd, _, errno := unix.Syscall(unix.SYS_CREAT, uintptr(unsafe.Pointer(p)), 0o644, 0)
	if errno != 0 {
		return errno
	}
	return unix.Close(int(fd))
}
