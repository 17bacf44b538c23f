package allowlist

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// MaxConfigSize bounds the size of a config file: 16 MiB holds 100,000
// entries of some 160 bytes each. A bigger file is refused unread.
const MaxConfigSize = 16 << 20

// readConfigFile reads a config file. Only a regular file (or a symbolic
// link to one) is read, so a FIFO, a device or a directory is refused at
// once instead of blocking or growing without end. /dev/null, the usual
// way to say "no file", reads as an empty config, and null says so.
func readConfigFile(name string) (data []byte, null bool, err error) {
	fi, err := os.Stat(name)
	if err != nil {
		return nil, false, fmt.Errorf("allowlist: config file: %w", err)
	}
	if err := checkConfigInfo(name, fi); err != nil || isDevNull(fi) {
		return nil, err == nil, err
	}
	// O_NONBLOCK: if the file was swapped for a FIFO since the stat, the
	// open does not wait for a writer, and the check below refuses it.
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, false, fmt.Errorf("allowlist: config file: %w", err)
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return nil, false, fmt.Errorf("allowlist: config file: %w", err)
	}
	if err := checkConfigInfo(name, fi); err != nil || isDevNull(fi) {
		return nil, err == nil, err
	}
	data, err = io.ReadAll(io.LimitReader(f, MaxConfigSize+1))
	if err != nil {
		return nil, false, fmt.Errorf("allowlist: reading config: %w", err)
	}
	if len(data) > MaxConfigSize {
		return nil, false, tooBig(name)
	}
	return data, false, nil
}

// checkConfigInfo refuses what is not a regular file, and a file larger
// than MaxConfigSize.
func checkConfigInfo(name string, fi fs.FileInfo) error {
	mode := fi.Mode()
	if mode.IsRegular() {
		if fi.Size() > MaxConfigSize {
			return tooBig(name)
		}
		return nil
	}
	if isDevNull(fi) {
		return nil
	}
	what := "not a regular file"
	switch {
	case mode.IsDir():
		what = "a directory"
	case mode&fs.ModeNamedPipe != 0:
		what = "a named pipe (FIFO)"
	case mode&fs.ModeCharDevice != 0:
		what = "a character device"
	case mode&fs.ModeDevice != 0:
		what = "a block device"
	case mode&fs.ModeSocket != 0:
		what = "a socket"
	}
	if real, err := filepath.EvalSymlinks(name); err == nil && real != filepath.Clean(name) {
		what += " (through a link to " + real + ")"
	}
	return fmt.Errorf("allowlist: config file %s is %s, not a regular file", name, what)
}

func tooBig(name string) error {
	return fmt.Errorf("allowlist: config file %s is larger than %d MiB, the most a config may hold", name, MaxConfigSize>>20)
}

// isDevNull reports whether fi is the null device (character device 1:3).
func isDevNull(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && fi.Mode()&fs.ModeCharDevice != 0 && unix.Major(st.Rdev) == 1 && unix.Minor(st.Rdev) == 3
}
