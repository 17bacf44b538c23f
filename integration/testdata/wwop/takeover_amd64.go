package main

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

func uintptrOf(p *byte) uintptr { return uintptr(unsafe.Pointer(p)) }

// exitGroupZero turns the call thread tid is entering into
// exit_group(0).
func exitGroupZero(tid int) error {
	var regs unix.PtraceRegs
	if err := unix.PtraceGetRegs(tid, &regs); err != nil {
		return fmt.Errorf("ptrace(PTRACE_GETREGS, %d): %w", tid, err)
	}
	regs.Orig_rax, regs.Rdi = unix.SYS_EXIT_GROUP, 0
	if err := unix.PtraceSetRegs(tid, &regs); err != nil {
		return fmt.Errorf("ptrace(PTRACE_SETREGS, %d): %w", tid, err)
	}
	return nil
}
