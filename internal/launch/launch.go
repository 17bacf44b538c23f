// Package launch starts COMMAND as the user it should run as, and reports
// how it ended the way a shell does.
//
// The kernel adds COMMAND to the traced tree when writewatch forks it
// (see tracer.Arm), so it is followed from its first instruction.
package launch

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// ErrNotFound means COMMAND is not in PATH or does not exist.
var ErrNotFound = errors.New("command not found")

// ErrNotExecutable means COMMAND exists but cannot be executed.
var ErrNotExecutable = errors.New("command not executable")

// ErrConfine means the kernel refused to confine COMMAND as asked: the
// Landlock ruleset or the metadata guard's seccomp filter.
var ErrConfine = errors.New("the kernel refused to confine COMMAND")

// Spec says what to run and how.
type Spec struct {
	Args                  []string // COMMAND and its arguments
	Env                   []string // nil: this process's environment
	Dir                   string
	Stdin, Stdout, Stderr *os.File
	User                  *Identity // nil: run as this process's user
	Setpgid               bool
	// Landlock, when set, is the Landlock ruleset COMMAND runs under,
	// from its first instruction. COMMAND is then started through the
	// trampoline (see Trampoline), which the program's main must run.
	Landlock *Landlock
	// MetadataGuard puts COMMAND under the metadata guard's seccomp
	// filter (package metaguard), from its first instruction, also
	// through the trampoline. Process.MetadataListener then returns the
	// listener to serve.
	MetadataGuard bool
	// NoIOURing: the guard's filter also makes io_uring_setup fail
	// (ENOSYS); only with MetadataGuard.
	NoIOURing bool
	// Thread, when set, runs COMMAND's start on a thread of the
	// caller's, whose namespaces and root COMMAND then starts in (a
	// sandbox's: sandbox.Sandbox.Do); not with Landlock or
	// MetadataGuard.
	Thread func(func())
}

// Identity is the user COMMAND runs as.
type Identity struct {
	UID, GID uint32
	Groups   []uint32
	Name     string
	Home     string
	Shell    string // login shell, from the password database
	// Path is the invoking user's PATH (see findUserPath), which COMMAND
	// runs with; PathFrom says where it was read. When it could not be,
	// Path is "" and PathErr says why. PathErr stays out of the
	// trampoline's JSON spec: an error interface does not decode.
	Path     string
	PathFrom string
	PathErr  error `json:"-"`
}

// SudoIdentity returns the user who invoked sudo, with the PATH that
// user has, or nil when this process was not started through sudo (or is
// not root).
func SudoIdentity() (*Identity, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	uidStr, gidStr := os.Getenv("SUDO_UID"), os.Getenv("SUDO_GID")
	if uidStr == "" || uidStr == "0" {
		return nil, nil
	}
	uid, err := strconv.ParseUint(uidStr, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("SUDO_UID=%q: %w", uidStr, err)
	}
	gid, err := strconv.ParseUint(gidStr, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("SUDO_GID=%q: %w", gidStr, err)
	}
	id := &Identity{UID: uint32(uid), GID: uint32(gid), Name: os.Getenv("SUDO_USER")}
	if a, ok := LookupAccount(id.UID); ok {
		id.Name, id.Home, id.Groups = a.Name, a.Home, a.Groups
		id.Shell = a.Shell
	}
	id.findUserPath()
	return id, nil
}

// Env rewrites an environment for this identity: HOME, USER, LOGNAME,
// PATH when the user's is known, and the sudo variables dropped.
func (id *Identity) Env(env []string) []string {
	out := make([]string, 0, len(env)+4)
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "HOME", "USER", "LOGNAME", "SUDO_UID", "SUDO_GID", "SUDO_USER", "SUDO_COMMAND":
			continue
		case "PATH":
			if id.Path != "" {
				continue
			}
		}
		out = append(out, kv)
	}
	if id.Path != "" {
		out = append(out, "PATH="+id.Path)
	}
	if id.Home != "" {
		out = append(out, "HOME="+id.Home)
	}
	if id.Name != "" {
		out = append(out, "USER="+id.Name, "LOGNAME="+id.Name)
	}
	return out
}

// Getenv is the value of key in env (its last entry, as the C library
// reads it), or "".
func Getenv(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}

// Resolve finds COMMAND the way a shell does, in the PATH of env.
func Resolve(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		st, err := os.Stat(name)
		if err != nil {
			return "", fmt.Errorf("%s: %w", name, ErrNotFound)
		}
		if st.IsDir() || st.Mode()&0o111 == 0 {
			return "", fmt.Errorf("%s: %w", name, ErrNotExecutable)
		}
		return name, nil
	}
	path := Getenv(env, "PATH")
	var notExec error
	for _, dir := range strings.Split(path, ":") {
		if dir == "" {
			dir = "."
		}
		cand := dir + "/" + name
		st, err := os.Stat(cand)
		if err != nil || st.IsDir() {
			continue
		}
		if st.Mode()&0o111 == 0 {
			notExec = fmt.Errorf("%s: %w", cand, ErrNotExecutable)
			continue
		}
		return cand, nil
	}
	if notExec != nil {
		return "", notExec
	}
	return "", fmt.Errorf("%s: %w in PATH", name, ErrNotFound)
}

// Process is a started COMMAND.
type Process struct {
	cmd      *exec.Cmd
	listener *os.File
}

// MetadataListener returns the metadata guard's listener (see
// Spec.MetadataGuard), once; the caller serves and closes it.
func (p *Process) MetadataListener() *os.File {
	l := p.listener
	p.listener = nil
	return l
}

// Start forks and execs COMMAND (path as found by Resolve).
func Start(path string, spec Spec) (*Process, error) {
	env := spec.Env
	if env == nil {
		env = os.Environ()
	}
	if spec.Landlock != nil || spec.MetadataGuard {
		return startTrampoline(path, spec, env)
	}
	cmd := &exec.Cmd{
		Path:        path,
		Args:        spec.Args,
		Env:         env,
		Dir:         spec.Dir,
		Stdin:       spec.Stdin,
		Stdout:      spec.Stdout,
		Stderr:      spec.Stderr,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: spec.Setpgid},
	}
	if id := spec.User; id != nil {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: id.UID, Gid: id.GID, Groups: id.Groups}
	}
	if err := startWithoutCapabilities(cmd, spec.Thread); err != nil {
		if errors.Is(err, syscall.ENOENT) {
			return nil, fmt.Errorf("start %s: %w", path, ErrNotFound)
		}
		if errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.ENOEXEC) {
			return nil, fmt.Errorf("start %s: %w: %w", path, ErrNotExecutable, err)
		}
		return nil, fmt.Errorf("start %s: %w", path, err)
	}
	return &Process{cmd: cmd}, nil
}

// Pid is COMMAND's process id in writewatch's PID namespace.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Signal sends sig to COMMAND.
func (p *Process) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// Wait waits for COMMAND and returns its exit code the way a shell
// reports it: the code it passed to exit, or 128+N when signal N ended it.
func (p *Process) Wait() (int, error) {
	err := p.cmd.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return 0, fmt.Errorf("wait for command: %w", err)
	}
	ws := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		return 128 + int(ws.Signal()), nil
	}
	return ws.ExitStatus(), nil
}

// InheritedFDs are the descriptors COMMAND inherits: its standard input,
// output and error as given (nil ones left out), and this process's own
// descriptors from 3 on that close-on-exec does not close.
func InheritedFDs(stdio ...*os.File) []int {
	var fds []int
	for _, f := range stdio {
		if f != nil {
			fds = append(fds, int(f.Fd()))
		}
	}
	ents, _ := os.ReadDir("/proc/self/fd")
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd < 3 {
			continue
		}
		if fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil && fl&unix.FD_CLOEXEC == 0 {
			fds = append(fds, fd)
		}
	}
	return fds
}
