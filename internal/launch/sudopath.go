package launch

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Under sudo, PATH is sudo's secure_path, which lacks where Go and other
// tools usually live (/usr/local/go/bin, ~/go/bin, ~/.local/bin): `sudo
// writewatch go test ./...` would not find go. So COMMAND is looked up,
// and runs, with the PATH the invoking user has: the PATH of the shell
// they ran sudo from, else the PATH their login shell sets up.

// loginShellTimeout bounds the login shell asked for the user's PATH.
const loginShellTimeout = 5 * time.Second

// pathMarker precedes the PATH in the login shell's output, which may
// hold whatever its startup files print.
const pathMarker = "writewatch-login-path:"

// findUserPath fills id.Path (and PathFrom), or id.PathErr.
func (id *Identity) findUserPath() {
	if path, ok := sudoCallerPath(os.Getppid(), id.UID); ok {
		id.Path, id.PathFrom = path, "the environment sudo was started with"
		return
	}
	path, err := loginShellPath(id, loginShellTimeout)
	if err != nil {
		id.PathErr = err
		return
	}
	id.Path, id.PathFrom = path, id.Name+"'s login shell ("+id.Shell+")"
}

// sudoCallerPath returns the PATH from the environment of the sudo
// process that started this one: an ancestor (sudo may sit between, as
// its own monitor, and so may make or a shell) whose program is sudo and
// whose real user is uid. /proc/PID/environ is the environment a
// process was started with: the invoking user's own, before sudo reset
// it.
func sudoCallerPath(pid int, uid uint32) (string, bool) {
	for range 16 {
		if pid <= 1 {
			return "", false
		}
		ppid, ruid, ok := procStatus(pid)
		if !ok {
			return "", false
		}
		if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil &&
			filepath.Base(exe) == "sudo" && ruid == uid {
			data, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
			if err != nil {
				return "", false
			}
			path := Getenv(strings.Split(string(data), "\x00"), "PATH")
			return path, path != ""
		}
		pid = ppid
	}
	return "", false
}

// procStatus reads a process's parent and real user from
// /proc/PID/status.
func procStatus(pid int) (ppid int, ruid uint32, ok bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, false
	}
	var havePPid, haveUid bool
	for line := range strings.SplitSeq(string(data), "\n") {
		key, val, _ := strings.Cut(line, ":")
		fields := strings.Fields(val)
		if len(fields) == 0 {
			continue
		}
		switch key {
		case "PPid":
			ppid, err = strconv.Atoi(fields[0])
			havePPid = err == nil
		case "Uid":
			u, err := strconv.ParseUint(fields[0], 10, 32)
			ruid, haveUid = uint32(u), err == nil
		}
	}
	return ppid, ruid, havePPid && haveUid
}

// loginShellPath runs id's login shell as id, as an interactive login
// shell (so that the PATH set in ~/.profile and in ~/.bashrc both
// count), and returns the PATH it ends up with. The shell runs in a
// session of its own, without a terminal, stdin from /dev/null, for at
// most timeout; its startup files' output is skipped.
func loginShellPath(id *Identity, timeout time.Duration) (string, error) {
	if id.Shell == "" {
		return "", fmt.Errorf("%s has no login shell in the password database", id.Name)
	}
	switch filepath.Base(id.Shell) {
	case "nologin", "false":
		return "", fmt.Errorf("%s has no login shell (%s)", id.Name, id.Shell)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, id.Shell, "-l", "-i", "-c", "echo "+pathMarker+"; printenv PATH")
	cmd.Env = []string{
		"HOME=" + id.Home, "USER=" + id.Name, "LOGNAME=" + id.Name, "SHELL=" + id.Shell,
		"PATH=/usr/local/bin:/usr/bin:/bin", "TERM=dumb",
	}
	if lang := os.Getenv("LANG"); lang != "" {
		cmd.Env = append(cmd.Env, "LANG="+lang)
	}
	cmd.Dir = "/"
	groups := id.Groups
	if len(groups) == 0 {
		groups = []uint32{id.GID}
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setsid:     true,
		Credential: &syscall.Credential{Uid: id.UID, Gid: id.GID, Groups: groups},
	}
	// The whole session goes, with anything its startup files started.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	out, err := cmd.Output()
	if ctx.Err() != nil {
		return "", fmt.Errorf("%s -l -i did not finish within %v", id.Shell, timeout)
	}
	if path, ok := parseMarkedPath(out); ok {
		return path, nil
	}
	if err != nil {
		return "", fmt.Errorf("%s -l -i: %w", id.Shell, err)
	}
	return "", fmt.Errorf("%s -l -i printed no PATH", id.Shell)
}

// parseMarkedPath returns the line after the last marker line.
func parseMarkedPath(out []byte) (string, bool) {
	var path string
	found := false
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == pathMarker {
			found = sc.Scan()
			path = strings.TrimSpace(sc.Text())
		}
	}
	return path, found && path != ""
}

// NotFoundHint is what to add to "COMMAND: command not found" under
// sudo: where COMMAND was looked for, or, when the invoking user's PATH
// could not be learnt, exactly what to run instead. It is "" for a nil
// identity, and for a name with a slash, which no PATH lookup involves.
func (id *Identity) NotFoundHint(name string) string {
	switch {
	case id == nil, strings.Contains(name, "/"):
		return ""
	case id.Path != "":
		return " in " + id.Name + "'s PATH, from " + id.PathFrom
	}
	why := "sudo reset PATH"
	if id.PathErr != nil {
		why += ", and " + id.Name + "'s own could not be read: " + id.PathErr.Error()
	}
	return fmt.Sprintf(" (%s); run instead: sudo env \"PATH=$PATH\" %s", why, shellJoin(os.Args))
}

// shellJoin quotes args for a POSIX shell.
func shellJoin(args []string) string {
	quoted := make([]string, len(args))
	for i, a := range args {
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == "" {
			quoted[i] = a
			continue
		}
		quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(quoted, " ")
}
