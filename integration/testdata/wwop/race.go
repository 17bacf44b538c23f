package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The gate suite's rewritten path (integration/gate_test.go).
func init() {
	edgeOps["rewrite-race"] = rewriteRace
	edgeOps["slow-chain"] = func(a []string) error {
		if err := os.MkdirAll(a[0], 0o755); err != nil {
			return err
		}
		_, err := slowChain(a[0])
		return err
	}
}

// slowChain makes in dir a chain of symlinks c0 → c1 → ... → dir itself,
// each with a long body of "./" components, so that the kernel takes a
// while to walk dir/c0, and returns dir/c0.
func slowChain(dir string) (string, error) {
	const links = 30
	pad := strings.Repeat("./", 1900)
	for i := links - 1; i >= 0; i-- {
		target := "."
		if i < links-1 {
			target = pad + "c" + strconv.Itoa(i+1)
		}
		link := filepath.Join(dir, "c"+strconv.Itoa(i))
		os.Remove(link)
		if err := os.Symlink(target, link); err != nil {
			return "", err
		}
	}
	return filepath.Join(dir, "c0"), nil
}

// rewriteRace CALL PROTECTED ALLOWED DIR DELAY: CALL (truncate, or mtime:
// utimensat setting the modification time alone) on PROTECTED, named
// through the slow chain of symlinks in DIR that slow-chain DIR made
// (DIR/c0/../NAME, where DIR is
// PROTECTED's sibling tests/chain and NAME is relative to its parent's
// parent), while another thread rewrites the name, DELAY after the call
// begins, into the one of ALLOWED: the kernel has read the protected
// name by then, and is still walking the chain; the name left in memory
// at the call's exit is the allowed one. It prints how long the call
// took.
func rewriteRace(a []string) error {
	call, protected, allowed, dir := a[0], a[1], a[2], a[3]
	delay, err := time.ParseDuration(a[4])
	if err != nil {
		return err
	}
	c0 := filepath.Join(dir, "c0")
	// dir/c0 is dir: dir/c0/../.. is dir's grandparent.
	base := filepath.Dir(filepath.Dir(dir))
	name := func(target string) []byte {
		rel, _ := filepath.Rel(base, target)
		return []byte(c0 + "/../../" + rel + "\x00")
	}
	bad, good := name(protected), name(allowed)
	buf := make([]byte, max(len(bad), len(good)))
	copy(buf, bad)
	var go_, done atomic.Bool
	go func() {
		runtime.LockOSThread()
		for !go_.Load() {
		}
		for start := time.Now(); time.Since(start) < delay; {
		}
		copy(buf, good) // the allowed name, in place
		done.Store(true)
	}()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	p := uintptr(unsafe.Pointer(&buf[0]))
	start := time.Now()
	go_.Store(true)
	var errno syscall.Errno
	switch call {
	case "truncate":
		_, _, errno = syscall.Syscall(unix.SYS_TRUNCATE, p, 0, 0)
	case "mtime":
		ts := [2]unix.Timespec{{Nsec: unix.UTIME_OMIT}, {Sec: 1}}
		cwd := unix.AT_FDCWD
		_, _, errno = syscall.Syscall6(unix.SYS_UTIMENSAT, uintptr(cwd), p, uintptr(unsafe.Pointer(&ts[0])), 0, 0, 0)
	default:
		return fmt.Errorf("unknown call %q", call)
	}
	took := time.Since(start)
	for !done.Load() {
	}
	runtime.KeepAlive(buf)
	fmt.Printf("%s took %v\n", call, took)
	if errno != 0 {
		return errno
	}
	return nil
}
