package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/writewatch/writewatch/report"
)

// goModule makes root a Go module with a main package and a go.mod
// without a go line (go mod tidy adds one), and returns the go command.
func goModule(t *testing.T, root string) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	writeFile(t, filepath.Join(root, "go.mod"), "module example.com/tool\n")
	writeFile(t, filepath.Join(root, "main.go"), "package main\n\nfunc main() {}\n")
	return goBin
}

// written finds a violation of any operation on path.
func written(r report.Report, path string) *report.Violation {
	for i, v := range r.Violations {
		if v.Path == path {
			return &r.Violations[i]
		}
	}
	return nil
}

// The Go toolchain is allowed by where it writes (its caches and the temp
// dir, among the defaults), never by its name: go mod tidy and go build
// -o . in the repository, run by a test (a shell here), are reported.
func TestGoToolchainWritesInTheRepository(t *testing.T) {
	for _, tc := range []struct {
		name string
		args string
		want string // the file written, under root
	}{
		{"go mod tidy", "mod tidy", "go.mod"},
		{"go build -o .", "build -o .", "tool"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, _ := project(t)
			goBin := goModule(t, root)
			res := wwEnv(t, root, []string{"GOTOOLCHAIN=local", "GOFLAGS="}, nil, "sh", "-c", goBin+" "+tc.args)
			path := filepath.Join(root, tc.want)
			if !exists(path) {
				t.Fatalf("go %s did not write %s\n%s", tc.args, tc.want, res.stderr)
			}
			if res.code != 86 {
				t.Errorf("exit code %d, want 86\n%s", res.code, res.stderr)
			}
			v := written(res.rep, path)
			if v == nil {
				t.Fatalf("go %s wrote %s unreported: %v\n%s", tc.args, path, keys(res.rep), res.stderr)
			}
			if v.Comm != "go" && filepath.Base(v.Exe) != "go" {
				t.Errorf("%s written by %s (%s), want the go command", tc.want, v.Comm, v.Exe)
			}
			// Nothing the toolchain writes where the defaults allow it (its
			// caches, the temp dir) is reported.
			for _, v := range res.rep.Violations {
				if filepath.Dir(v.Path) != root {
					t.Errorf("go %s: %s %s reported: the defaults should allow it", tc.args, v.Op, v.Path)
				}
			}
		})
	}
}

// A program is not exempt for its name: a shell reached as some/bin/go or
// some/pkg/tool/linux_amd64/compile (the Go toolchain's own names) that
// writes outside the allowlist is reported.
func TestProgramNamedLikeGoIsReported(t *testing.T) {
	root, _ := project(t)
	fake := t.TempDir()
	goPath := filepath.Join(fake, "bin", "go")
	toolPath := filepath.Join(fake, "pkg", "tool", "linux_amd64", "compile")
	for _, p := range []string{goPath, toolPath} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("/bin/sh", p); err != nil {
			t.Fatal(err)
		}
	}
	script := goPath + ` -c 'echo x > config.toml'; ` + toolPath + ` -c 'echo y > other.toml; ` + opBin + ` write third.toml'`
	res := ww(t, root, nil, "sh", "-c", script)
	if res.code != 86 {
		t.Errorf("exit code %d, want 86\n%s", res.code, res.stderr)
	}
	for _, name := range []string{"config.toml", "other.toml", "third.toml"} {
		path := filepath.Join(root, name)
		if !exists(path) {
			t.Fatalf("the script did not write %s\n%s", name, res.stderr)
		}
		if violation(res.rep, "open", path) == nil {
			t.Errorf("%s, written by a program named like the Go toolchain, is not reported: %v", name, keys(res.rep))
		}
	}
}
