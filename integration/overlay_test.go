package integration

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/writewatch/writewatch/report"
)

// containerScript starts a container's layout: a mount namespace whose
// root is an overlay of the host's root, its layers in $1 (on the
// filesystem of the project, as Docker keeps them beside its volumes),
// the project ($2) bind-mounted at /builds, then runs the rest of its
// arguments in /builds. Where the host's root is an initramfs (rootfs,
// as in make vmtest's guests), which pivot_root cannot leave, the
// container's root is moved over it and made the root, as switch_root
// does.
const containerScript = `set -e
layers=$1 proj=$2
shift 2
mount --make-rprivate /
mkdir -p "$layers/upper" "$layers/work" "$layers/root"
mount -t overlay overlay -o "lowerdir=/,upperdir=$layers/upper,workdir=$layers/work" "$layers/root"
mkdir -p "$layers/root/builds"
mount --bind "$proj" "$layers/root/builds"
mount -t proc proc "$layers/root/proc"
mount --rbind /sys "$layers/root/sys"
mount --rbind /dev "$layers/root/dev"
cd "$layers/root"
mkdir -p .old
if pivot_root . .old 2>/dev/null; then
	umount -l /.old
	cd /builds
	exec "$@"
fi
mount --move . /
exec chroot . sh -c 'cd /builds && exec "$@"' sh "$@"
`

// canOverlay skips the test where an overlay cannot be mounted.
func canOverlay(t *testing.T, dir string) {
	t.Helper()
	for _, d := range []string{"l", "u", "w", "m"} {
		must(t, os.MkdirAll(filepath.Join(dir, d), 0o755))
	}
	out, err := exec.Command("mount", "-t", "overlay", "overlay", "-o",
		"lowerdir="+dir+"/l,upperdir="+dir+"/u,workdir="+dir+"/w", dir+"/m").CombinedOutput()
	if err != nil {
		t.Skipf("no overlay mount here: %v: %s", err, out)
	}
	must(t, exec.Command("umount", dir+"/m").Run())
	os.RemoveAll(dir)
}

// Case 5 in a container whose root is an overlay, its layers on the
// filesystem of the project's volume: the witness watches that
// filesystem, and each write to the container's root makes the overlay
// write its layers there, outside every path the container has. Those
// changes are the overlay's (overlay_layers), not changes the run could
// not name: a clean run passes, and a write to the container's root is
// reported by its system call, with the overlay's path.
func TestVerdictInOverlayContainer(t *testing.T) {
	root, outside := project(t)
	layers := filepath.Join(outside, "layers")
	canOverlay(t, filepath.Join(outside, "probe"))
	// run runs writewatch in the container on sh -c command, after the
	// container's shell has run prep.
	run := func(t *testing.T, prep, command string) (int, report.Report, string) {
		t.Helper()
		os.Remove(filepath.Join(root, "report.json"))
		cmd := exec.Command("timeout", "120", "unshare", "--mount", "--pid", "--fork", "--mount-proc",
			"sh", "-c", containerScript, "sh", layers, root,
			"sh", "-c", prep+`; exec "$0" --json /builds/report.json -- sh -c "$1"`, wwBin, command)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		var rep report.Report
		data, err := os.ReadFile(filepath.Join(root, "report.json"))
		if err != nil {
			t.Fatalf("no report (exit %d): %v\n%s", code, err, stderr.String())
		}
		must(t, json.Unmarshal(data, &rep))
		if w := rep.Witness; w == nil || !w.Active {
			t.Skipf("the filesystem witness is off here: %+v", w)
		}
		return code, rep, stderr.String()
	}
	t.Run("clean", func(t *testing.T) {
		code, rep, stderr := run(t, ":", "echo x > /tmp/allowed.txt; mkdir -p /tmp/d/e; echo y > /tmp/d/e/f; rm /tmp/allowed.txt")
		if code != 0 || len(rep.Incomplete) != 0 {
			t.Errorf("exit %d, incomplete %q; want 0 and complete\n%s", code, rep.Incomplete, stderr)
		}
		if rep.Witness.OverlayLayers == 0 {
			t.Errorf("no change counted as the overlay's: %+v", rep.Witness)
		}
	})
	t.Run("a write through a descriptor of the container's root", func(t *testing.T) {
		// Its file is on the overlay, which the witness cannot watch:
		// the run is incomplete, not clean.
		code, rep, stderr := run(t, "echo before > /root/inherited.toml; exec 3>>/root/inherited.toml", "echo changed >&3")
		if code != 88 || !strings.Contains(strings.Join(rep.Incomplete, "\n"), "/root/inherited.toml") {
			t.Errorf("exit %d, incomplete %q; want 88 naming /root/inherited.toml\n%s", code, rep.Incomplete, stderr)
		}
	})
	t.Run("a write to the container's root", func(t *testing.T) {
		code, rep, stderr := run(t, ":", "mkdir -p /root/.config/app; echo y > /root/.config/app/state")
		if code != 86 || len(rep.Incomplete) != 0 {
			t.Errorf("exit %d, incomplete %q; want 86 and complete\n%s", code, rep.Incomplete, stderr)
		}
		found := false
		for _, v := range rep.Violations {
			found = found || v.Path == "/root/.config/app/state"
			if strings.HasPrefix(v.Path, layers) {
				t.Errorf("a violation in the overlay's layers: %s", v.Path)
			}
		}
		if !found {
			t.Errorf("/root/.config/app/state not reported: %v\n%s", keys(rep), stderr)
		}
	})
}

// An overlay mounted on the host, its layers in paths writewatch can
// name: a write through the overlay is reported once, by the overlay's
// path, and an allowed one not at all; what the overlay wrote in its
// upper directory is the overlay's.
func TestVerdictOverlayOnTheHost(t *testing.T) {
	_, outside := project(t)
	canOverlay(t, filepath.Join(outside, "probe"))
	ov := filepath.Join(outside, "ov")
	for _, d := range []string{"lower", "upper", "work", "merged"} {
		must(t, os.MkdirAll(filepath.Join(ov, d), 0o755))
	}
	must(t, exec.Command("mount", "-t", "overlay", "overlay", "-o",
		"lowerdir="+ov+"/lower,upperdir="+ov+"/upper,workdir="+ov+"/work", ov+"/merged").Run())
	t.Cleanup(func() { exec.Command("umount", ov+"/merged").Run() })
	proj := filepath.Join(ov, "merged", "proj")
	must(t, os.MkdirAll(filepath.Join(proj, "tests"), 0o755))
	writeFile(t, filepath.Join(proj, ".writewatch.yaml"), "allow:\n  - tests/**\n")
	res := ww(t, proj, nil, "sh", "-c", "echo x > tests/ok.txt; echo y > stray.txt")
	if res.code != 86 || len(res.rep.Incomplete) != 0 {
		t.Errorf("exit %d, incomplete %q; want 86 and complete\n%s", res.code, res.rep.Incomplete, res.stderr)
	}
	var paths []string
	for _, v := range res.rep.Violations {
		paths = append(paths, v.Path)
	}
	if len(paths) != 1 || paths[0] != filepath.Join(proj, "stray.txt") {
		t.Errorf("violations %q, want only %s", paths, filepath.Join(proj, "stray.txt"))
	}
	// The layers' changes are seen where the witness watches their
	// filesystem: the root's, here; not in make vmtest's guests, where
	// /var/tmp is a tmpfs of its own that no path of the run lies on.
	if w := res.rep.Witness; w != nil && w.Active && watched(t, w, filepath.Join(ov, "upper")) && w.OverlayLayers == 0 {
		t.Errorf("no change counted as the overlay's: %+v", w)
	}
}

// watched says the witness watched the filesystem path lies on.
func watched(t *testing.T, w *report.WitnessInfo, path string) bool {
	t.Helper()
	dev := func(p string) (uint64, bool) {
		st, err := os.Stat(p)
		if err != nil {
			return 0, false
		}
		return st.Sys().(*syscall.Stat_t).Dev, true
	}
	want, ok := dev(path)
	if !ok {
		t.Fatalf("stat %s", path)
	}
	for _, fs := range w.Filesystems {
		for _, p := range fs.Paths {
			if d, ok := dev(p); fs.Watched && ok && d == want {
				return true
			}
		}
	}
	return false
}
