package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// suggestProject is a project holding testdata/suggest, whose config is
// a flow list ("allow: []"), with a home directory of its own beside it
// (HOME in env) that has a ~/.config, and a directory elsewhere, beside
// both. go keeps its real caches.
func suggestProject(t *testing.T) (root, elsewhere, home string, env []string) {
	t.Helper()
	root, home, env = learnProject(t)
	elsewhere = filepath.Join(filepath.Dir(root), "elsewhere")
	if err := os.MkdirAll(elsewhere, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(home, ".config", "learn")); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"learn.go", "learn_test.go", "kinds_test.go", "go.mod"} {
		os.Remove(filepath.Join(root, f))
	}
	copyDir(t, "../testdata/suggest", root)
	writeFile(t, filepath.Join(root, ".writewatch.yaml"), "# the project's config\nallow: []  # nothing yet\n")
	return root, elsewhere, home, env
}

// proposal reads a --suggest-config file.
func proposal(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// useAsConfig makes text the project's config.
func useAsConfig(t *testing.T, root, text string) {
	t.Helper()
	writeFile(t, filepath.Join(root, ".writewatch.yaml"), text)
}

// The proposal from a run whose writes have random names, written as
// the project's config, lets the next run pass: its names are new, but
// of the same patterns. The flow list of the config becomes a block list
// with its comments; no entry names a random name as it was, nor allows
// all of ~/.config.
func TestSuggestConfigNextRun(t *testing.T) {
	root, _, home, env := suggestProject(t)
	file := filepath.Join(root, ".writewatch.yaml.new")
	res := wwEnv(t, root, env, []string{"--suggest-config", file}, "go", "test", "-count=1", "./...")
	if res.code != 86 {
		t.Fatalf("first run: exit %d, want 86\n%s", res.code, res.stderr)
	}
	text := proposal(t, file)
	for _, want := range []string{
		"# the project's config\nallow: # nothing yet\n",
		"\n  - ~/.config/myapp/\n",
		"\n  - out/\n",
		"\n  - ~/.config/alpha.toml\n", "\n  - ~/.config/beta.ini\n", "\n  - ~/.config/gamma.json\n",
		"\n  - data/a/info.json.*.tmp\n", "\n  - data/b/info.json.*.tmp\n", "\n  - data/c/info.json.*.tmp\n",
		"\n  - ~/tmp.*-dotdrop-tests\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("%q missing in the proposal:\n%s", want, text)
		}
	}
	for _, not := range []string{"- ~/.config\n", "- ~/.config/\n", "- ~/.config/*", "dotdrop-tests/"} {
		if strings.Contains(text, not) {
			t.Errorf("the proposal has %q:\n%s", not, text)
		}
	}
	if n := strings.Count(text, "\n  - "); n != 9 {
		t.Errorf("%d entries, want 9:\n%s", n, text)
	}
	if exists(filepath.Join(home, ".config", "myapp")) {
		t.Fatalf("~/.config/myapp is left from the first run")
	}

	useAsConfig(t, root, text)
	res = wwEnv(t, root, env, nil, "go", "test", "-count=1", "./...")
	if res.code != 0 {
		t.Errorf("second run: exit %d, want 0\n%s\nthe config:\n%s", res.code, res.stderr, text)
	}
}

// Written outside the project, the proposal's entries, and the config's
// own relative ones, are absolute: it lets the next run pass read where
// it is (--config FILE) and copied in the config's place.
func TestSuggestConfigElsewhere(t *testing.T) {
	root, elsewhere, _, env := suggestProject(t)
	useAsConfig(t, root, "allow:\n  - tests/**  # our own\n")
	file := filepath.Join(elsewhere, "proposal.yaml")
	run := []string{"go", "test", "-count=1", "-run", "TestAppConfig|TestOutputs|TestAtomicWrites", "./..."}
	res := wwEnv(t, root, env, []string{"--suggest-config", file}, run...)
	if res.code != 86 {
		t.Fatalf("first run: exit %d, want 86\n%s", res.code, res.stderr)
	}
	text := proposal(t, file)
	for _, want := range []string{
		"\n  - " + root + "/tests/** # our own\n",
		"\n  - " + root + "/out/\n",
		"\n  - " + root + "/data/a/info.json.*.tmp\n",
		"\n  - ~/.config/myapp/\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("%q missing in the proposal:\n%s", want, text)
		}
	}

	res = wwEnv(t, root, env, []string{"--config", file}, run...)
	if res.code != 0 {
		t.Errorf("run with --config %s: exit %d, want 0\n%s\nthe config:\n%s", file, res.code, res.stderr, text)
	}
	useAsConfig(t, root, text)
	res = wwEnv(t, root, env, nil, run...)
	if res.code != 0 {
		t.Errorf("run with the proposal as the project's config: exit %d, want 0\n%s", res.code, res.stderr)
	}
}

// Under --enforce, the proposal lets the next run pass: ~/.config/myapp,
// missing at start, is named with a trailing '/', which --enforce makes
// before the run and grants (its parent, ~/.config, stays refused), and
// removes at the end when the run left it empty. The proposal comes from
// a run without --enforce, or from one with --enforce=block, whose
// refused writes it allows. The writes of new random names are left
// out: the kernel grants only the names there at start (see the
// proposal's comments).
func TestSuggestConfigEnforce(t *testing.T) {
	tier := enforceTier()
	run := []string{"go", "test", "-count=1", "-run", "TestAppConfig|TestOutputs", "./..."}
	for _, first := range [][]string{nil, {"--enforce=block", "--enforce-with", tier}} {
		t.Run(strings.Join(append([]string{"first"}, first...), " "), func(t *testing.T) {
			root, _, home, env := suggestProject(t)
			file := filepath.Join(root, ".writewatch.yaml.new")
			res := wwEnv(t, root, env, append([]string{"--suggest-config", file}, first...), run...)
			if res.code != 86 {
				t.Fatalf("first run: exit %d, want 86\n%s", res.code, res.stderr)
			}
			text := proposal(t, file)
			for _, want := range []string{"\n  - ~/.config/myapp/\n", "\n  - out/\n"} {
				if !strings.Contains(text, want) {
					t.Errorf("%q missing in the proposal:\n%s", want, text)
				}
			}
			os.RemoveAll(filepath.Join(root, "out"))
			useAsConfig(t, root, text)
			res = wwEnv(t, root, env, []string{"--enforce", "--enforce-with", tier}, run...)
			if res.code != 0 {
				t.Errorf("second run, under --enforce: exit %d, want 0\n%s\nthe config:\n%s", res.code, res.stderr, text)
			}
			if exists(filepath.Join(home, ".config", "myapp")) {
				t.Errorf("~/.config/myapp, made for the run and left empty, is still there")
			}
			if !exists(filepath.Join(root, "out", "report.txt")) {
				t.Errorf("out/report.txt was not written")
			}
			// Something else in ~/.config is still refused.
			res = wwEnv(t, root, env, []string{"--enforce", "--enforce-with", tier}, "sh", "-c", "mkdir \"$HOME/.config/other\"")
			if res.code != 86 || exists(filepath.Join(home, ".config", "other")) {
				t.Errorf("mkdir ~/.config/other under --enforce: exit %d, want 86, and no directory\n%s", res.code, res.stderr)
			}
		})
	}
}

// Under --enforce, an entry for a directory missing at start grants
// nothing: the kernel grants what is there when the run starts, and
// ~/.config granted would let the run write all of it. Named with a
// trailing '/', as --suggest-config names a directory, it is made before
// the run and granted, and removed at the end when left empty. Its
// parent is not granted: COMMAND cannot remove the directory itself.
func TestSuggestedDirUnderEnforce(t *testing.T) {
	tier := enforceTier()
	root, _, home, env := suggestProject(t)
	enforce := []string{"--enforce", "--enforce-with", tier}
	myapp := filepath.Join(home, ".config", "myapp")
	write := `mkdir -p "$HOME/.config/myapp" && echo x > "$HOME/.config/myapp/settings.json" && rm "$HOME/.config/myapp/settings.json"`

	useAsConfig(t, root, "allow:\n  - ~/.config/myapp\n")
	res := wwEnv(t, root, env, enforce, "sh", "-c", write)
	if res.code != 86 {
		t.Errorf("without the /: exit %d, want 86\n%s", res.code, res.stderr)
	}
	if !strings.Contains(res.stderr, "with a trailing / (~/.config/myapp/)") {
		t.Errorf("the summary does not say to end the entry with /:\n%s", res.stderr)
	}

	useAsConfig(t, root, "allow:\n  - ~/.config/myapp/\n")
	res = wwEnv(t, root, env, enforce, "sh", "-c", write)
	if res.code != 0 {
		t.Errorf("with the /: exit %d, want 0\n%s", res.code, res.stderr)
	}
	if exists(myapp) {
		t.Errorf("%s, made for the run and left empty, is still there", myapp)
	}
	// It is there when COMMAND makes it: a mkdir without -p fails
	// (EEXIST); removing it is refused.
	res = wwEnv(t, root, env, enforce, "sh", "-c", `mkdir "$HOME/.config/myapp"`)
	if res.code != 1 {
		t.Errorf("mkdir without -p: exit %d, want mkdir's 1\n%s", res.code, res.stderr)
	}
	res = wwEnv(t, root, env, enforce, "sh", "-c", `rmdir "$HOME/.config/myapp"`)
	if res.code != 1 {
		t.Errorf("rmdir: exit %d, want rmdir's 1\n%s", res.code, res.stderr)
	}
	// --print-config says so.
	cmd := exec.Command(wwBin, "--print-config", "--enforce-with", tier)
	cmd.Dir, cmd.Env = root, append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "missing at start: made before the run (the entry ends in /), then granted whole") {
		t.Errorf("--print-config: %v\n%s", err, out)
	}
}
