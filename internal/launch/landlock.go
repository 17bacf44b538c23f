package launch

// Landlock is spoken to here with its raw syscalls, not through
// github.com/landlock-lsm/go-landlock (v0.11.2 was weighed), because:
//   - its Config.NewRulesetFD creates and fills a ruleset in one call,
//     opening each rule's whole path, one rule after another; here a few
//     threads each add a run of rules, opening a path relative to the
//     previous rule's directory. 100,000 file rules (a 2-core machine,
//     medians of 5): 0.96 s with the library, 0.70 s here, for about the
//     same CPU time;
//   - it fails on a path it cannot open for any reason but ENOENT, and
//     with EINVAL on a directory's rights given to what is now a file;
//     here such a rule is left out (the path cannot be written either),
//     and a file keeps the rights that apply to a file;
//   - its Restrict restricts every thread (through libcap's psx) and
//     always sets no_new_privs; the trampoline restricts its one thread
//     and sets no_new_privs only when the kernel wants it (not as root,
//     so that set-uid programs keep working in COMMAND's tree);
//   - its ABI probe counts a kernel of ABI 6 or later that lacks the fix
//     for signal scoping (Landlock erratum 2) as ABI 5, and then refuses
//     LANDLOCK_SCOPE_SIGNAL (or, in best-effort mode, drops it), which
//     writewatch asks for from ABI 6.
// What would be left to it, creating the ruleset and asking the ABI, is
// two syscalls; the module would add libcap's psx (C code in a cgo
// build).

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"unsafe"

	"github.com/writewatch/writewatch/internal/metaguard"
	"golang.org/x/sys/unix"
)

// Landlock is the Landlock ruleset COMMAND runs under: the kernel refuses
// every access in Handled that no rule grants.
type Landlock struct {
	Handled uint64 // LANDLOCK_ACCESS_FS_* rights the ruleset restricts
	Rules   []LandlockRule
	// Scoped are the LANDLOCK_SCOPE_* the ruleset restricts (Landlock
	// ABI 6): with LANDLOCK_SCOPE_SIGNAL, COMMAND's tree cannot signal a
	// process outside it, writewatch included.
	Scoped uint64

	built chan rulesetResult // see Prepare
}

type rulesetResult struct {
	f   *os.File
	err error
}

// Prepare starts building the ruleset in the kernel, in the background,
// so that a big one is ready sooner; the next Start with it takes it.
// Calling it is optional.
func (l *Landlock) Prepare() {
	if l == nil || l.built != nil {
		return
	}
	l.built = make(chan rulesetResult, 1)
	go func() {
		f, err := buildRuleset(l)
		l.built <- rulesetResult{f, err}
	}()
}

// ruleset returns the ruleset, prepared or built now, as a descriptor
// that closes on exec; the caller closes it.
func (l *Landlock) ruleset() (*os.File, error) {
	if l.built == nil {
		return buildRuleset(l)
	}
	r := <-l.built
	l.built = nil
	return r.f, r.err
}

// LandlockRule grants Access beneath Path (or on Path, for a file: only
// LandlockFileRights apply to a file, and others are dropped).
type LandlockRule struct {
	Path   string
	Access uint64
}

// LandlockFileRights are the Landlock rights that apply to a file itself;
// the others apply to the entries of a directory.
const LandlockFileRights = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
	unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV

// LandlockABI returns the Landlock ABI version of the running kernel, 0
// when Landlock is not available.
func LandlockABI() (int, error) {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0, errno
	}
	return int(v), nil
}

// The trampoline: Landlock and the metadata guard's seccomp filter must
// be applied between fork and exec, which os/exec cannot do. So
// writewatch builds the Landlock ruleset, forks itself (/proc/self/exe)
// with trampolineEnv set; that child reads its trampolineSpec from fd 3,
// restricts itself with the ruleset on fd 6, sends the filter's listener
// back over the socket on fd 5, takes COMMAND's identity and execs
// COMMAND. It reports a failure before exec on fd 4, which closes on a
// successful exec.
const (
	trampolineEnv = "WRITEWATCH_TRAMPOLINE"
	specFD        = 3
	statusFD      = 4
	listenerFD    = 5
	rulesetFD     = 6
)

type trampolineSpec struct {
	Path string
	Args []string
	Env  []string
	User *Identity
	// Landlock says a Landlock ruleset, built by writewatch, waits on
	// rulesetFD.
	Landlock bool
	Guard    bool
	NoURing  bool
	// Absent are the syscalls the guard's filter leaves alone, which the
	// kernel lacks (metaguard.Absent, asked by writewatch, whose calls
	// are not traced).
	Absent []string
}

// IsTrampoline reports whether this process was started as the
// trampoline. The program's main must then call Trampoline first thing.
func IsTrampoline() bool { return os.Getenv(trampolineEnv) == "1" }

// Trampoline sets up COMMAND's Landlock domain, metadata guard and
// identity, and execs it. It returns only when that failed (the failure
// is reported to writewatch): main must then exit with the code it
// returns.
func Trampoline() int {
	err := trampoline()
	status := os.NewFile(statusFD, "status")
	fmt.Fprintf(status, "%s %v", failureClass(err), err)
	return 127
}

// The classes of a trampoline failure, as it reports them to writewatch.
const (
	classNotFound = "not-found"
	classNotExec  = "not-executable"
	classConfine  = "confine"
	classOther    = "other"
)

// classed is a trampoline failure with its class.
type classed struct {
	class string
	err   error
}

func (c classed) Error() string { return c.err.Error() }
func (c classed) Unwrap() error { return c.err }

func failureClass(err error) string {
	var c classed
	if errors.As(err, &c) {
		return c.class
	}
	return classOther
}

// execFailed classes a failed exec of COMMAND the way a shell does.
func execFailed(path string, err error) error {
	class := classOther
	switch {
	case errors.Is(err, syscall.ENOENT):
		class = classNotFound
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.ENOEXEC), errors.Is(err, syscall.EPERM):
		class = classNotExec
	}
	return classed{class, fmt.Errorf("exec %s: %w", path, err)}
}

func trampoline() error {
	syscall.CloseOnExec(statusFD)
	f := os.NewFile(specFD, "spec")
	var spec trampolineSpec
	err := json.NewDecoder(f).Decode(&spec)
	f.Close()
	if err != nil {
		return fmt.Errorf("read spec: %w", err)
	}
	// Landlock and the identity below apply to this thread only; exec
	// then runs on it, and COMMAND inherits both.
	runtime.LockOSThread()
	syscall.CloseOnExec(rulesetFD)
	if spec.Landlock {
		if err := restrictSelf(rulesetFD); err != nil {
			return classed{classConfine, err}
		}
	}
	syscall.CloseOnExec(listenerFD)
	if spec.Guard {
		if err := sendListener(spec.NoURing, spec.Absent); err != nil {
			return classed{classConfine, err}
		}
	}
	if id := spec.User; id != nil {
		if err := becomeThreadOnly(id); err != nil {
			return err
		}
	}
	err = syscall.Exec(spec.Path, spec.Args, spec.Env)
	return execFailed(spec.Path, err)
}

// sendListener installs the metadata guard's filter on this thread
// (refusing io_uring_setup when noURing, leaving alone the syscalls of
// absent) and sends its listener to writewatch.
func sendListener(noURing bool, absent []string) error {
	l, err := metaguard.Install(noURing, absent)
	if err != nil {
		return err
	}
	defer l.Close()
	rights := unix.UnixRights(int(l.Fd()))
	if err := unix.Sendmsg(listenerFD, []byte{0}, rights, nil, 0); err != nil {
		return fmt.Errorf("metadata guard: send listener: %w", err)
	}
	return nil
}

// receiveListener receives the listener sendListener sent, or nil when
// the trampoline failed before it could.
func receiveListener(sock *os.File) (*os.File, error) {
	buf, oob := make([]byte, 1), make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := unix.Recvmsg(int(sock.Fd()), buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("metadata guard: receive listener: %w", err)
	}
	if n == 0 {
		return nil, nil
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return nil, fmt.Errorf("metadata guard: receive listener: no descriptor")
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		return nil, fmt.Errorf("metadata guard: receive listener: no descriptor")
	}
	return os.NewFile(uintptr(fds[0]), "seccomp-listener"), nil
}

// buildRuleset creates the ruleset and adds its rules, with a few
// threads: most of the time goes to opening the paths. Each thread takes
// a run of consecutive rules, which mostly share their directory.
func buildRuleset(l *Landlock) (*os.File, error) {
	// struct landlock_ruleset_attr, as long as the kernel needs to be
	// told: scoped came with ABI 6, and an older kernel refuses a longer
	// struct.
	attr := struct{ fs, net, scoped uint64 }{fs: l.Handled, scoped: l.Scoped}
	size := unsafe.Sizeof(attr)
	if l.Scoped == 0 {
		size = unsafe.Offsetof(attr.scoped)
	}
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if errno != 0 {
		return nil, fmt.Errorf("landlock: create ruleset: %w", errno)
	}
	f := os.NewFile(fd, "landlock-ruleset") // close-on-exec, as the kernel makes it
	workers := min(max(runtime.NumCPU(), 1), 4, len(l.Rules)/1024+1)
	per := (len(l.Rules) + workers - 1) / workers
	errs := make(chan error, workers)
	for w := range workers {
		rules := l.Rules[min(w*per, len(l.Rules)):min((w+1)*per, len(l.Rules))]
		go func() {
			var o opener
			defer o.close()
			var err error
			for i := 0; i < len(rules) && err == nil; i++ {
				err = addRule(int(fd), l.Handled, rules[i], &o)
			}
			errs <- err
		}()
	}
	var err error
	for range workers {
		err = errors.Join(err, <-errs)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// opener opens paths with O_PATH, relative to the directory of the
// previous one when they share it: a walk of one name instead of the
// whole path.
type opener struct {
	dir string
	fd  int
}

func (o *opener) open(path string) (int, error) {
	dir := filepath.Dir(path)
	if dir != o.dir || o.fd <= 0 {
		o.close()
		fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
		}
		o.dir, o.fd = dir, fd
	}
	return unix.Openat(o.fd, filepath.Base(path), unix.O_PATH|unix.O_CLOEXEC, 0)
}

func (o *opener) close() {
	if o.fd > 0 {
		unix.Close(o.fd)
	}
	o.dir, o.fd = "", 0
}

// addRule adds one rule to the ruleset fd. A path that cannot be opened
// cannot be written either: the rule is not needed. A file takes only
// the rights that apply to a file.
func addRule(fd int, handled uint64, r LandlockRule, o *opener) error {
	pfd, err := o.open(r.Path)
	if err != nil {
		return nil
	}
	defer unix.Close(pfd)
	access := r.Access & handled
	errno := landlockAddRule(fd, pfd, access)
	if errno == unix.EINVAL && access&^LandlockFileRights != 0 {
		var st unix.Stat_t
		if unix.Fstat(pfd, &st) == nil && st.Mode&unix.S_IFMT != unix.S_IFDIR {
			access &= LandlockFileRights
			errno = landlockAddRule(fd, pfd, access)
		}
	}
	if errno != 0 && access != 0 {
		return fmt.Errorf("landlock: rule for %s: %w", r.Path, errno)
	}
	return nil
}

func landlockAddRule(fd, pfd int, access uint64) unix.Errno {
	rule := unix.LandlockPathBeneathAttr{Allowed_access: access, Parent_fd: int32(pfd)}
	_, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(fd), unix.LANDLOCK_RULE_PATH_BENEATH,
		uintptr(unsafe.Pointer(&rule)), 0, 0, 0)
	return errno
}

// restrictSelf applies the ruleset on fd to the calling thread.
func restrictSelf(fd uintptr) error {
	// Without CAP_SYS_ADMIN the kernel wants no_new_privs first. As root
	// it is left unset, so set-uid programs still work (inside the domain).
	_, _, errno := unix.RawSyscall(unix.SYS_LANDLOCK_RESTRICT_SELF, fd, 0, 0)
	if errno == unix.EPERM {
		if _, _, e := unix.RawSyscall6(unix.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0, 0); e != 0 {
			return fmt.Errorf("landlock: prctl(PR_SET_NO_NEW_PRIVS): %w", e)
		}
		_, _, errno = unix.RawSyscall(unix.SYS_LANDLOCK_RESTRICT_SELF, fd, 0, 0)
	}
	if errno != 0 {
		return fmt.Errorf("landlock: restrict self: %w", errno)
	}
	return nil
}

// becomeThreadOnly takes id's groups, gid and uid on this thread only
// (raw syscalls, unlike syscall.Setuid, which changes every thread): the
// thread execs COMMAND right after. The ruleset is already in place, and
// Landlock does not care who the thread is.
func becomeThreadOnly(id *Identity) error {
	groups := id.Groups
	if len(groups) == 0 {
		groups = []uint32{id.GID}
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, uintptr(len(groups)), uintptr(unsafe.Pointer(&groups[0])), 0); e != 0 {
		return fmt.Errorf("setgroups: %w", e)
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, uintptr(id.GID), uintptr(id.GID), uintptr(id.GID)); e != 0 {
		return fmt.Errorf("setresgid: %w", e)
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, uintptr(id.UID), uintptr(id.UID), uintptr(id.UID)); e != 0 {
		return fmt.Errorf("setresuid: %w", e)
	}
	return nil
}

// startTrampoline starts this program as the trampoline for COMMAND and
// waits until COMMAND is exec'd (or the trampoline failed).
func startTrampoline(path string, spec Spec, env []string) (*Process, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find writewatch itself: %w", err)
	}
	ts := trampolineSpec{Path: path, Args: spec.Args, Env: env, User: spec.User, Guard: spec.MetadataGuard, NoURing: spec.NoIOURing}
	if spec.MetadataGuard {
		ts.Absent = metaguard.Absent()
	}
	// The ruleset goes to the trampoline as a descriptor: a big one is
	// built by several threads, while the rest of the start goes on.
	var ruleset *os.File
	if spec.Landlock != nil {
		if ruleset, err = spec.Landlock.ruleset(); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrConfine, err)
		}
		defer ruleset.Close()
		ts.Landlock = true
	}
	specFile, err := specMemfd(ts)
	if err != nil {
		return nil, err
	}
	defer specFile.Close()
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer statusR.Close()
	socks, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		statusW.Close()
		return nil, fmt.Errorf("socketpair: %w", err)
	}
	sockOurs, sockTheirs := os.NewFile(uintptr(socks[0]), "listener"), os.NewFile(uintptr(socks[1]), "listener")
	defer sockOurs.Close()
	cmd := &exec.Cmd{
		Path:        self,
		Args:        []string{spec.Args[0]},
		Env:         []string{trampolineEnv + "=1"},
		Dir:         spec.Dir,
		Stdin:       spec.Stdin,
		Stdout:      spec.Stdout,
		Stderr:      spec.Stderr,
		ExtraFiles:  []*os.File{specFile, statusW, sockTheirs, ruleset},
		SysProcAttr: &syscall.SysProcAttr{Setpgid: spec.Setpgid},
	}
	err = startWithoutCapabilities(cmd, nil)
	statusW.Close()
	sockTheirs.Close()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", self, err)
	}
	// The listener comes first; the socket closes on exec or exit.
	var listener *os.File
	if spec.MetadataGuard {
		listener, err = receiveListener(sockOurs)
		if err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			return nil, err
		}
	}
	msg, _ := io.ReadAll(statusR)
	if len(msg) == 0 && (listener != nil || !spec.MetadataGuard) {
		return &Process{cmd: cmd, listener: listener}, nil // exec'd: the pipe closed on exec
	}
	if listener != nil {
		listener.Close()
	}
	cmd.Wait()
	return nil, trampolineError(path, msg)
}

// specMemfd writes ts to a memfd, read from its start by the trampoline.
func specMemfd(ts trampolineSpec) (*os.File, error) {
	data, err := json.Marshal(ts)
	if err != nil {
		return nil, err
	}
	mfd, err := unix.MemfdCreate("writewatch-spec", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("memfd: %w", err)
	}
	f := os.NewFile(uintptr(mfd), "spec")
	if _, err := f.Write(data); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// trampolineError is the error of a start the trampoline reported
// failed, in its status message msg: "CLASS TEXT".
func trampolineError(path string, msg []byte) error {
	class, text, _ := strings.Cut(string(msg), " ")
	switch class {
	case classNotFound:
		return fmt.Errorf("%s: %w", text, ErrNotFound)
	case classNotExec:
		return fmt.Errorf("%s: %w", text, ErrNotExecutable)
	case classConfine:
		return fmt.Errorf("%s: %w", text, ErrConfine)
	}
	return fmt.Errorf("start %s: %s", path, text)
}

// LandlockWriteRights are the Landlock rights that change the file system,
// as far as the kernel's Landlock ABI abi knows them: writing and
// truncating files, creating, removing, renaming and linking entries.
// Reading, executing and ioctl are never restricted.
func LandlockWriteRights(abi int) uint64 {
	r := uint64(unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_REMOVE_DIR |
		unix.LANDLOCK_ACCESS_FS_REMOVE_FILE | unix.LANDLOCK_ACCESS_FS_MAKE_CHAR |
		unix.LANDLOCK_ACCESS_FS_MAKE_DIR | unix.LANDLOCK_ACCESS_FS_MAKE_REG |
		unix.LANDLOCK_ACCESS_FS_MAKE_SOCK | unix.LANDLOCK_ACCESS_FS_MAKE_FIFO |
		unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK | unix.LANDLOCK_ACCESS_FS_MAKE_SYM)
	if abi >= 2 {
		r |= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if abi >= 3 {
		r |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	return r
}
