package integration

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/writewatch/writewatch/internal/allowlist"
)

// straceWrites runs command under `strace -f` in dir and returns the
// writes it shows outside the allowlist of dir's .writewatch.yaml: the
// ground truth writewatch is checked against. Paths are resolved the way
// writewatch documents: the file an open returned (strace -y shows it), a
// relative path joined to the directory strace shows for its dirfd or
// working directory, symlinks in the directories above followed.
func straceWrites(t *testing.T, dir string, command ...string) []key {
	t.Helper()
	if _, err := exec.LookPath("strace"); err != nil {
		t.Fatal("strace is needed as ground truth: apt-get install strace")
	}
	out := filepath.Join(t.TempDir(), "trace")
	args := append([]string{"-f", "-ff", "-qq", "-y", "-s", "65536", "-o", out,
		"-e", "trace=%file,chown,lchown,fchmod,fchown,fsetxattr,fremovexattr"}, command...)
	cmd := exec.Command("strace", args...)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Logf("strace %v: %v\n%s", command, err, b)
	}
	files, _ := filepath.Glob(out + ".*")
	if len(files) == 0 {
		t.Fatalf("strace wrote no trace for %v", command)
	}
	list, err := allowlist.Load(allowlist.Options{WorkDir: dir, Home: os.Getenv("HOME"), Getenv: os.Getenv})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[key]bool{}
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			for _, k := range straceLine(sc.Text(), dir) {
				if !list.Allowed(k.path) {
					seen[k] = true
				}
			}
		}
		fh.Close()
	}
	var ks []key
	for k := range seen {
		ks = append(ks, k)
	}
	slices.SortFunc(ks, func(a, b key) int { return strings.Compare(a.String(), b.String()) })
	return ks
}

// heldOpen reports whether a link's source names a file the process
// holds open, which writewatch judged when it was opened: "" (with
// AT_EMPTY_PATH) or /proc/{self,thread-self,PID}/fd/N.
func heldOpen(path string) bool {
	return path == "" || procFD.MatchString(path)
}

var procFD = regexp.MustCompile(`^/proc/(self|thread-self|[0-9]+)/fd/[0-9]+$`)

// straceLine turns one line of `strace -y` into the writes it made. cwd
// is the directory relative paths of calls without a dirfd start from
// (strace -y shows it for AT_FDCWD only): the one the command started in,
// which is right for the programs these tests run.
func straceLine(line, cwd string) []key {
	m := straceCall.FindStringSubmatch(line)
	if m == nil {
		return nil
	}
	name, args, ret := m[1], splitArgs(m[2]), m[3]
	failed := strings.HasPrefix(ret, "-1 ")
	arg := func(i int) string {
		if i >= 0 && i < len(args) {
			return args[i]
		}
		return ""
	}
	// path joins a path argument to its directory argument (-1: cwd).
	path := func(p, d int) string {
		req := unquote(arg(p))
		if strings.HasPrefix(req, "/") {
			return parentResolved(filepath.Clean(req))
		}
		base := cwd
		if d >= 0 {
			base = annotation(arg(d))
		}
		return parentResolved(filepath.Clean(base + "/" + req))
	}
	// opened is the file an open returned. Files with no path (strace
	// shows pipe:[N], socket:[N], /memfd:name) are not file writes.
	opened := func(p, d int) string {
		if a := annotation(ret); !failed && a != "" {
			if !strings.HasPrefix(a, "/") || strings.HasPrefix(a, "/memfd:") {
				return ""
			}
			return a
		}
		return path(p, d)
	}
	one := func(op, p string) []key {
		if p == "" {
			return nil
		}
		return []key{{op, p, ""}}
	}
	writeFlags := func(flags string) bool {
		for _, f := range []string{"O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND", "O_TMPFILE"} {
			if strings.Contains(flags, f) {
				return true
			}
		}
		return false
	}
	link := func(op string, oldP, oldD, newP, newD int) []key {
		ks := []key{{op, path(newP, newD), "new"}}
		if op == "link" && !heldOpen(unquote(arg(oldP))) {
			ks = append(ks, key{op, path(oldP, oldD), "old"})
		}
		return ks
	}
	switch name {
	case "open", "creat":
		if name == "open" && !writeFlags(arg(1)) {
			return nil
		}
		return one(name, opened(0, -1))
	case "openat", "openat2":
		if !writeFlags(arg(2)) {
			return nil
		}
		if strings.Contains(arg(2), "O_TMPFILE") {
			return one("open", path(1, 0))
		}
		return one("open", opened(1, 0))
	case "truncate":
		return one("truncate", path(0, -1))
	case "rename":
		return []key{{"rename", path(0, -1), "old"}, {"rename", path(1, -1), "new"}}
	case "renameat", "renameat2":
		return []key{{"rename", path(1, 0), "old"}, {"rename", path(3, 2), "new"}}
	case "unlink":
		return one("unlink", path(0, -1))
	case "rmdir":
		return one("rmdir", path(0, -1))
	case "unlinkat":
		if strings.Contains(arg(2), "AT_REMOVEDIR") {
			return one("rmdir", path(1, 0))
		}
		return one("unlink", path(1, 0))
	case "mkdir":
		return one("mkdir", path(0, -1))
	case "mkdirat":
		return one("mkdir", path(1, 0))
	case "mknod":
		return one("mknod", path(0, -1))
	case "mknodat":
		return one("mknod", path(1, 0))
	case "link":
		return link("link", 0, -1, 1, -1)
	case "linkat":
		return link("link", 1, 0, 3, 2)
	case "symlink":
		return []key{{"symlink", path(1, -1), "new"}}
	case "symlinkat":
		return []key{{"symlink", path(2, 1), "new"}}
	case "chmod":
		return one("chmod", path(0, -1))
	case "fchmodat", "fchmodat2":
		return one("chmod", path(1, 0))
	case "chown", "lchown":
		return one("chown", path(0, -1))
	case "fchownat":
		return one("chown", path(1, 0))
	case "utime", "utimes":
		return one("utimes", path(0, -1))
	case "utimensat", "futimesat":
		if arg(1) == "NULL" {
			return one("utimes", annotation(arg(0)))
		}
		return one("utimes", path(1, 0))
	case "setxattr", "lsetxattr":
		return one("setxattr", path(0, -1))
	case "removexattr", "lremovexattr":
		return one("removexattr", path(0, -1))
	case "fchmod":
		return one("chmod", annotation(arg(0)))
	case "fchown":
		return one("chown", annotation(arg(0)))
	case "fsetxattr":
		return one("setxattr", annotation(arg(0)))
	case "fremovexattr":
		return one("removexattr", annotation(arg(0)))
	}
	return nil
}

// straceCall matches `name(args) = result`; strace pads short calls with
// spaces before the '='.
var straceCall = regexp.MustCompile(`^(\w+)\((.*)\)\s+= (.*)$`)

// parentResolved follows symlinks in the directories above path.
func parentResolved(path string) string {
	dir, base := filepath.Split(path)
	if real, err := filepath.EvalSymlinks(dir); err == nil && dir != "/" {
		return filepath.Join(real, base)
	}
	return path
}

// annotation is the path strace -y shows in <...> after an fd.
func annotation(s string) string {
	i := strings.IndexByte(s, '<')
	j := strings.LastIndexByte(s, '>')
	if i < 0 || j < i {
		return ""
	}
	return strings.TrimSuffix(s[i+1:j], " (deleted)")
}

// splitArgs splits strace's argument list at top-level commas.
func splitArgs(s string) []string {
	var args []string
	depth, start := 0, 0
	inStr := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inStr && c == '\\':
			i++
		case c == '"':
			inStr = !inStr
		case inStr:
		case c == '(' || c == '[' || c == '{' || c == '<':
			depth++
		case c == ')' || c == ']' || c == '}' || c == '>':
			depth--
		case c == ',' && depth == 0:
			args = append(args, strings.TrimSpace(s[start:i]))
			start = i + 1
		}
	}
	return append(args, strings.TrimSpace(s[start:]))
}

// unquote decodes a C string as strace prints it.
func unquote(s string) string {
	s = strings.TrimSuffix(strings.TrimPrefix(s, `"`), `"...`)
	s = strings.TrimSuffix(s, `"`)
	var b []byte
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			b = append(b, s[i])
			continue
		}
		i++
		switch c := s[i]; c {
		case 'n':
			b = append(b, '\n')
		case 't':
			b = append(b, '\t')
		case 'r':
			b = append(b, '\r')
		case 'v':
			b = append(b, '\v')
		case 'f':
			b = append(b, '\f')
		case 'x':
			if v, err := strconv.ParseUint(s[i+1:i+3], 16, 8); err == nil {
				b = append(b, byte(v))
				i += 2
			}
		case '0', '1', '2', '3', '4', '5', '6', '7':
			j := i
			for j < len(s) && j < i+3 && s[j] >= '0' && s[j] <= '7' {
				j++
			}
			v, _ := strconv.ParseUint(s[i:j], 8, 8)
			b = append(b, byte(v))
			i = j - 1
		default:
			b = append(b, c)
		}
	}
	return string(b)
}

func TestStraceLineParsing(t *testing.T) {
	for line, want := range map[string][]key{
		`openat(AT_FDCWD</p>, "x.txt", O_WRONLY|O_CREAT|O_TRUNC, 0666) = 3</p/x.txt>`:       {{"open", "/p/x.txt", ""}},
		`openat(AT_FDCWD</p>, "x.txt", O_RDONLY) = 3</p/x.txt>`:                             nil,
		`openat(3</d>, "a\nb", O_WRONLY|O_CREAT, 0644) = -1 EACCES (Permission denied)`:     {{"open", "/d/a\nb", ""}},
		`renameat2(AT_FDCWD</p>, "a", AT_FDCWD</p>, "/q/b", RENAME_NOREPLACE) = 0`:          {{"rename", "/p/a", "old"}, {"rename", "/q/b", "new"}},
		`linkat(AT_FDCWD</p>, "/proc/self/fd/3", AT_FDCWD</p>, "l", AT_SYMLINK_FOLLOW) = 0`: {{"link", "/p/l", "new"}},
		`unlinkat(4</t>, "d", AT_REMOVEDIR) = 0`:                                            {{"rmdir", "/t/d", ""}},
		`fchmod(3</p/m.txt>, 0640) = 0`:                                                     {{"chmod", "/p/m.txt", ""}},
	} {
		if got := straceLine(line, "/cwd"); !slices.Equal(got, want) {
			t.Errorf("straceLine(%q) = %v, want %v", line, got, want)
		}
	}
}
