package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// The operations of the gate suite's takeover (integration/gate_test.go):
// a process of the tree that reaches writewatch itself.
func init() {
	edgeOps["ptrace-exit"] = ptraceExit
}

// ptraceExit PID: take process PID over with ptrace and make it exit
// with status 0 at once: every thread of it seized (PTRACE_SEIZE) and
// interrupted, then let go one system call at a time until one enters
// a call, whose number and first argument are rewritten to exit_group(0).
func ptraceExit(a []string) error {
	pid, err := strconv.Atoi(a[0])
	if err != nil {
		return err
	}
	runtime.LockOSThread() // ptrace requests come from the tracer's thread
	defer runtime.UnlockOSThread()
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return err
	}
	for _, t := range tasks {
		tid, _ := strconv.Atoi(t.Name())
		if _, _, errno := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_SEIZE, uintptr(tid), 0, unix.PTRACE_O_TRACESYSGOOD, 0, 0); errno != 0 {
			return fmt.Errorf("ptrace(PTRACE_SEIZE, %d): %w", tid, errno)
		}
		if err := unix.PtraceInterrupt(tid); err != nil {
			return fmt.Errorf("ptrace(PTRACE_INTERRUPT, %d): %w", tid, err)
		}
	}
	for {
		var ws unix.WaitStatus
		tid, err := unix.Wait4(-1, &ws, unix.WALL, nil)
		if err != nil {
			return fmt.Errorf("wait: %w", err)
		}
		if !ws.Stopped() {
			continue
		}
		if ws.StopSignal() == unix.SIGTRAP|0x80 && enteringSyscall(tid) {
			if err := exitGroupZero(tid); err != nil {
				return err
			}
			return unix.PtraceCont(tid, 0)
		}
		if err := unix.PtraceSyscall(tid, 0); err != nil {
			return fmt.Errorf("ptrace(PTRACE_SYSCALL, %d): %w", tid, err)
		}
	}
}

// enteringSyscall says whether thread tid, stopped by PTRACE_SYSCALL,
// stopped on the entry of a call (PTRACE_GET_SYSCALL_INFO).
func enteringSyscall(tid int) bool {
	var info [128]byte
	_, _, errno := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_GET_SYSCALL_INFO, uintptr(tid), uintptr(len(info)), uintptrOf(&info[0]), 0, 0)
	return errno == 0 && info[0] == unix.PTRACE_SYSCALL_INFO_ENTRY
}
