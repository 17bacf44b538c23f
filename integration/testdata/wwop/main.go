// Command wwop performs filesystem operations named on its command line,
// one syscall each, so tests can check exactly what writewatch sees.
//
//	wwop OP ARGS... [, OP ARGS...]
//
// Operations: write PATH, read PATH, creat PATH, trunc PATH, append PATH,
// rename OLD NEW, unlink PATH, rmdir PATH, mkdir PATH, symlink TARGET NEW,
// link OLD NEW, mknod PATH, truncate PATH, openat DIR REL (relative to an
// fd of DIR), chdir DIR, deep N NAME (mkdir and enter NAME N times), undeep N
// NAME (leave and rmdir NAME N times),
// thread-write PATH,
// spin-write DIR SECONDS (rewrite a file in DIR until time is up),
// spin-churn DIR SECONDS (create and unlink files deep under DIR, by
// absolute paths of about 3500 bytes, until time is up and at least 400
// times: unlinks the kernel does not judge alone, so each one is a big
// record for user space), read-flood DIR N STOPDIR (N files written,
// then read with writewatch stopped: see readFlood), mmap-gc PATH (a
// write through a shared mapping whose last close the kernel makes),
// held-link FILE NEW fd|proc (see heldLink), swap-after CALL DIR TARGET
// (see swapAfter), gone-after CALL DIR TARGET (see goneAfter).
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	args := os.Args[1:]
	for len(args) > 0 {
		end := len(args)
		for i, a := range args {
			if a == "," {
				end = i
				break
			}
		}
		if err := do(args[0], args[1:end]); err != nil {
			fmt.Fprintf(os.Stderr, "wwop %s: %v\n", strings.Join(args[:end], " "), err)
			os.Exit(1)
		}
		if end == len(args) {
			break
		}
		args = args[end+1:]
	}
}

func openWrite(path string, flags int) error {
	fd, err := unix.Open(path, flags, 0o644)
	if err != nil {
		return err
	}
	unix.Write(fd, []byte("x\n"))
	return unix.Close(fd)
}

func do(op string, a []string) error {
	f, ok := basicOps[op]
	if !ok {
		f, ok = edgeOps[op]
	}
	if !ok {
		return fmt.Errorf("unknown op %q", op)
	}
	return f(a)
}

// basicOps are the operations named in the package comment.
var basicOps = map[string]func(a []string) error{
	"write":  func(a []string) error { return openWrite(a[0], unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC) },
	"append": func(a []string) error { return openWrite(a[0], unix.O_WRONLY|unix.O_APPEND) },
	"trunc":  func(a []string) error { return openWrite(a[0], unix.O_WRONLY|unix.O_TRUNC) },
	"read": func(a []string) error {
		fd, err := unix.Open(a[0], unix.O_RDONLY, 0)
		if err != nil {
			return err
		}
		return unix.Close(fd)
	},
	"creat":    creat,
	"truncate": func(a []string) error { return unix.Truncate(a[0], 0) },
	"rename":   func(a []string) error { return unix.Rename(a[0], a[1]) },
	"unlink":   func(a []string) error { return unix.Unlink(a[0]) },
	"rmdir":    func(a []string) error { return unix.Rmdir(a[0]) },
	"mkdir":    func(a []string) error { return unix.Mkdir(a[0], 0o755) },
	"symlink":  func(a []string) error { return unix.Symlink(a[0], a[1]) },
	"link":     func(a []string) error { return unix.Link(a[0], a[1]) },
	// link-follow OLD NEW: linkat with AT_SYMLINK_FOLLOW (ln -L): a
	// symlink OLD is followed, and NEW is a new name of its target.
	"link-follow": func(a []string) error {
		return unix.Linkat(unix.AT_FDCWD, a[0], unix.AT_FDCWD, a[1], unix.AT_SYMLINK_FOLLOW)
	},
	"mknod":        func(a []string) error { return unix.Mknod(a[0], unix.S_IFIFO|0o644, 0) },
	"chdir":        func(a []string) error { return unix.Chdir(a[0]) },
	"deep":         deep,
	"undeep":       undeep,
	"openat":       openat,
	"thread-write": threadWrite,
	"spin-write":   spinWrite,
	"spin-churn":   spinChurn,
}

// deep N NAME: mkdir NAME and enter it, N times, one relative step at a
// time, so the path can grow past PATH_MAX.
func deep(a []string) error {
	n, err := strconv.Atoi(a[0])
	if err != nil {
		return err
	}
	for range n {
		if err := unix.Mkdir(a[1], 0o755); err != nil {
			return err
		}
		if err := unix.Chdir(a[1]); err != nil {
			return err
		}
	}
	return nil
}

// undeep N NAME: undo deep N NAME from its deepest directory: leave it
// and remove it, N times, one relative step at a time (busybox's rm -rf,
// in make vmtest's guests, cannot remove a tree deeper than PATH_MAX).
func undeep(a []string) error {
	n, err := strconv.Atoi(a[0])
	if err != nil {
		return err
	}
	for range n {
		if err := unix.Chdir(".."); err != nil {
			return err
		}
		if err := unix.Rmdir(a[1]); err != nil {
			return err
		}
	}
	return nil
}

// openat DIR REL: create REL relative to a descriptor of DIR.
func openat(a []string) error {
	dfd, err := unix.Open(a[0], unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	fd, err := unix.Openat(dfd, a[1], unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	return unix.Close(fd)
}

// threadWrite writes PATH from a thread other than the main one.
func threadWrite(a []string) error {
	var err error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		runtime.LockOSThread() // a thread other than the main one
		err = openWrite(a[0], unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC)
	}()
	wg.Wait()
	return err
}

// spinWrite DIR SECONDS rewrites a file in DIR until time is up.
func spinWrite(a []string) error {
	secs, err := strconv.ParseFloat(a[1], 64)
	if err != nil {
		return err
	}
	stop := time.Now().Add(time.Duration(secs * float64(time.Second)))
	for i := 0; time.Now().Before(stop); i++ {
		if err := openWrite(filepath.Join(a[0], "busy.txt"), unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC); err != nil {
			return err
		}
	}
	return nil
}

// spinChurn DIR SECONDS creates and unlinks files deep under DIR until
// time is up.
func spinChurn(a []string) error {
	secs, err := strconv.ParseFloat(a[1], 64)
	if err != nil {
		return err
	}
	dir, err := filepath.Abs(a[0])
	if err != nil {
		return err
	}
	// Long paths make big records, to fill the ring buffer sooner.
	for len(dir) < 3500 {
		dir = filepath.Join(dir, strings.Repeat("d", 200))
		if err := unix.Mkdir(dir, 0o755); err != nil && err != unix.EEXIST {
			return err
		}
	}
	stop := time.Now().Add(time.Duration(secs * float64(time.Second)))
	name := filepath.Join(dir, fmt.Sprintf("churn-%d", os.Getpid()))
	// At least 400 unlinks, however slow the machine: 1.4 MB of records,
	// more than a 1 MiB ring buffer holds (a VM under emulation made
	// about 200 in a second).
	for round := 0; round < 4 || time.Now().Before(stop); round++ {
		for range 100 {
			if err := openWrite(name, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC); err != nil {
				return err
			}
			if err := unix.Unlink(name); err != nil {
				return err
			}
		}
	}
	return nil
}
