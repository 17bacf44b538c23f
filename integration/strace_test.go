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
	var calls [][]key
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			calls = append(calls, straceLine(sc.Text(), dir))
		}
		fh.Close()
	}
	seen := map[key]bool{}
	for _, k := range throughLinks(calls) {
		if !list.Allowed(k.path) {
			seen[k] = true
		}
	}
	var ks []key
	for k := range seen {
		ks = append(ks, k)
	}
	slices.SortFunc(ks, func(a, b key) int { return strings.Compare(a.String(), b.String()) })
	return ks
}

// throughLinks is the writes of calls as writewatch counts those of hard
// links: a link changes nothing of the file linked (its "old" key is no
// write), and a write of a file in place (its contents or metadata)
// through a new name is a write of the name it was linked from too.
func throughLinks(calls [][]key) []key {
	linked := map[string]string{}
	for _, ks := range calls {
		if len(ks) == 2 && ks[0].op == "link" && ks[1].role == "old" {
			linked[ks[0].path] = ks[1].path
		}
	}
	var out []key
	for _, ks := range calls {
		for _, k := range ks {
			switch {
			case k.op == "link" && k.role == "old":
				continue
			case k.op == "open" || k.op == "creat" || k.op == "truncate" || byFDOps[k.op]:
				if from, ok := linked[k.path]; ok {
					out = append(out, key{k.op, from, ""})
				}
			}
			out = append(out, k)
		}
	}
	return out
}

// byFDOps are the metadata changes, which change a file in place.
var byFDOps = map[string]bool{"chmod": true, "chown": true, "utimes": true, "setxattr": true, "removexattr": true}

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
	c := &tracedCall{name: m[1], args: splitArgs(m[2]), ret: m[3], cwd: cwd}
	if w, ok := byPath[c.name]; ok {
		return one(w.op, c.path(w.p, w.d))
	}
	if op, ok := byFD[c.name]; ok {
		return one(op, annotation(c.arg(0)))
	}
	return c.writes()
}

// byPath lists the calls that write the one path they name: the
// operation, the path's argument and its directory's (-1: the working
// directory).
var byPath = map[string]struct {
	op   string
	p, d int
}{
	"truncate": {"truncate", 0, -1}, "unlink": {"unlink", 0, -1}, "rmdir": {"rmdir", 0, -1},
	"mkdir": {"mkdir", 0, -1}, "mkdirat": {"mkdir", 1, 0}, "mknod": {"mknod", 0, -1}, "mknodat": {"mknod", 1, 0},
	"chmod": {"chmod", 0, -1}, "fchmodat": {"chmod", 1, 0}, "fchmodat2": {"chmod", 1, 0},
	"chown": {"chown", 0, -1}, "lchown": {"chown", 0, -1}, "fchownat": {"chown", 1, 0},
	"utime": {"utimes", 0, -1}, "utimes": {"utimes", 0, -1},
	"setxattr": {"setxattr", 0, -1}, "lsetxattr": {"setxattr", 0, -1},
	"removexattr": {"removexattr", 0, -1}, "lremovexattr": {"removexattr", 0, -1},
}

// byFD lists the calls that write the file behind their first argument,
// a descriptor, by operation.
var byFD = map[string]string{"fchmod": "chmod", "fchown": "chown", "fsetxattr": "setxattr", "fremovexattr": "removexattr"}

// tracedCall is one call strace showed.
type tracedCall struct {
	name string
	args []string
	ret  string
	cwd  string
}

// writes are the writes of the calls neither byPath nor byFD lists.
func (c *tracedCall) writes() []key {
	switch c.name {
	case "open", "creat":
		if c.name == "open" && !writeFlags(c.arg(1)) {
			return nil
		}
		return one(c.name, c.opened(0, -1))
	case "openat", "openat2":
		if !writeFlags(c.arg(2)) {
			return nil
		}
		if strings.Contains(c.arg(2), "O_TMPFILE") {
			return one("open", c.path(1, 0))
		}
		return one("open", c.opened(1, 0))
	case "rename":
		return []key{{"rename", c.path(0, -1), "old"}, {"rename", c.path(1, -1), "new"}}
	case "renameat", "renameat2":
		return []key{{"rename", c.path(1, 0), "old"}, {"rename", c.path(3, 2), "new"}}
	case "unlinkat":
		if strings.Contains(c.arg(2), "AT_REMOVEDIR") {
			return one("rmdir", c.path(1, 0))
		}
		return one("unlink", c.path(1, 0))
	case "link":
		return c.link(0, -1, 1, -1)
	case "linkat":
		return c.link(1, 0, 3, 2)
	case "symlink":
		return []key{{"symlink", c.path(1, -1), "new"}}
	case "symlinkat":
		return []key{{"symlink", c.path(2, 1), "new"}}
	case "utimensat", "futimesat":
		if c.arg(1) == "NULL" {
			return one("utimes", annotation(c.arg(0)))
		}
		return one("utimes", c.path(1, 0))
	}
	return nil
}

func (c *tracedCall) arg(i int) string {
	if i >= 0 && i < len(c.args) {
		return c.args[i]
	}
	return ""
}

// path joins a path argument to its directory argument (-1: cwd).
func (c *tracedCall) path(p, d int) string {
	req := unquote(c.arg(p))
	if strings.HasPrefix(req, "/") {
		return parentResolved(filepath.Clean(req))
	}
	base := c.cwd
	if d >= 0 {
		base = annotation(c.arg(d))
	}
	return parentResolved(filepath.Clean(base + "/" + req))
}

// opened is the file an open returned. Files with no path (strace shows
// pipe:[N], socket:[N], /memfd:name) are not file writes.
func (c *tracedCall) opened(p, d int) string {
	if a := annotation(c.ret); !strings.HasPrefix(c.ret, "-1 ") && a != "" {
		if !strings.HasPrefix(a, "/") || strings.HasPrefix(a, "/memfd:") {
			return ""
		}
		return a
	}
	return c.path(p, d)
}

// link is a hard link's writes: the new name, and the file linked unless
// the process holds it open.
func (c *tracedCall) link(oldP, oldD, newP, newD int) []key {
	ks := []key{{"link", c.path(newP, newD), "new"}}
	if !heldOpen(unquote(c.arg(oldP))) {
		ks = append(ks, key{"link", c.path(oldP, oldD), "old"})
	}
	return ks
}

func one(op, p string) []key {
	if p == "" {
		return nil
	}
	return []key{{op, p, ""}}
}

func writeFlags(flags string) bool {
	for _, f := range []string{"O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND", "O_TMPFILE"} {
		if strings.Contains(flags, f) {
			return true
		}
	}
	return false
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
		`mkdirat(AT_FDCWD</p>, "d", 0755) = 0`:                                              {{"mkdir", "/p/d", ""}},
		`lchown("f", 0, 0) = 0`:                                                             {{"chown", "/cwd/f", ""}},
		`link("a", "/q/b") = 0`:                                                             {{"link", "/q/b", "new"}, {"link", "/cwd/a", "old"}},
		`linkat(3</p/f>, "", AT_FDCWD</p>, "l", AT_EMPTY_PATH) = 0`:                         {{"link", "/p/l", "new"}},
		`fremovexattr(3</p/f>, "user.x") = 0`:                                               {{"removexattr", "/p/f", ""}},
		`utimensat(3</p/f>, NULL, NULL, 0) = 0`:                                             {{"utimes", "/p/f", ""}},
		`read(3</p/f>, "x", 1) = 1`:                                                         nil,
	} {
		if got := straceLine(line, "/cwd"); !slices.Equal(got, want) {
			t.Errorf("straceLine(%q) = %v, want %v", line, got, want)
		}
	}
}
