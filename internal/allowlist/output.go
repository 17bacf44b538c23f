package allowlist

import (
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// An Output is a regular file that writewatch's stdout or stderr goes to
// (writewatch COMMAND > ci.log), which COMMAND inherits.
type Output struct {
	Name string // "stdout" or "stderr"
	Path string // absolute
}

// OutputFile returns the regular file that f, one of writewatch's own
// descriptors, writes to, named as Name. ok is false for anything else (a
// terminal, a pipe, /dev/null) and for a file that no longer has the name
// the kernel gives for it (removed or renamed since it was opened).
func OutputFile(name string, f *os.File) (o Output, ok bool) {
	var st unix.Stat_t
	if f == nil || unix.Fstat(int(f.Fd()), &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return Output{}, false
	}
	path, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
	if err != nil || !filepath.IsAbs(path) {
		return Output{}, false
	}
	var named unix.Stat_t
	if unix.Stat(path, &named) != nil || named.Dev != st.Dev || named.Ino != st.Ino {
		return Output{}, false
	}
	return Output{Name: name, Path: path}, true
}
