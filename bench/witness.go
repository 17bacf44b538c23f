package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// witnessUser is the account COMMAND runs as in the witness table's
// on-demand configuration: one every system has, none added.
const witnessUser = "nobody"

// witnessTable measures what the filesystem witness (fanotify, package
// witness) costs: writewatch --audit as it runs as root, with
// CAP_SYS_ADMIN dropped from its bounding set (setpriv), which turns the
// witness off and nothing else (the programs need only CAP_BPF and
// CAP_PERFMON), and as root with COMMAND run as a user, as `sudo
// writewatch` runs it (SUDO_UID, SUDO_GID, SUDO_USER of witnessUser),
// where the witness watches file contents on demand, and the same with
// the witness off. Bare and the first two run COMMAND as root. Each
// writewatch configuration's report is checked to say the witness was on
// with contents from the start, off, or on with contents on demand. The
// micro workloads are half the main table's size: five configurations at
// that size take less than three at full.
func (b *bench) witnessTable(out io.Writer) error {
	if _, err := exec.LookPath("setpriv"); err != nil {
		fmt.Fprintln(out, "\nThe filesystem witness's cost: not measured (setpriv, from util-linux, not found).")
		return nil
	}
	audit := func(j string) []string { return []string{b.ww, "--audit", "--quiet", "--json", j, "--"} }
	on := config{name: "writewatch --audit (witness on)", prefix: audit}
	off := config{name: "writewatch --audit, witness off", prefix: func(j string) []string {
		return append([]string{"setpriv", "--bounding-set", "-sys_admin"}, audit(j)...)
	}}
	if err := b.checkWitness(on, true, "from the start"); err != nil {
		return err
	}
	if err := b.checkWitness(off, false, ""); err != nil {
		return err
	}
	lazy, owner, why := b.asUser(witnessUser, audit)
	// The same as the user with the witness off: the user's run has costs
	// of its own (its login PATH looked up, say), which this one shares.
	lazyOff := lazy
	lazyOff.name, lazyOff.prefix = "writewatch --audit, COMMAND as a user, witness off", off.prefix
	if why == "" {
		if err := b.checkWitness(lazy, true, "on demand"); err != nil {
			return err
		}
		if err := b.checkWitness(lazyOff, false, ""); err != nil {
			return err
		}
	}
	nWrite, nRepeat := 500_000, 500_000
	if b.quick {
		nWrite, nRepeat = 50_000, 50_000
	}
	allowedDir := filepath.Join(b.tmp, "allowed")
	n := func(v int) string { return fmt.Sprintf("%d", v) }
	workloads := []workload{
		{name: "micro: writes allowed (" + n(nWrite) + ")", argv: []string{b.micro, "write", allowedDir, n(nWrite)}, dir: b.proj, prepare: owner(allowedDir)},
		{name: "micro: one path violated (" + n(nRepeat) + ")", argv: []string{b.micro, "write", b.out, n(nRepeat)}, dir: b.proj, prepare: owner(b.out), violates: true},
		b.goSuiteWorkload(),
		{name: "start-up: true", argv: []string{"true"}, dir: b.proj},
	}
	fmt.Fprintf(out, "\nThe filesystem witness's cost, writewatch --audit run as root: bare, witness on and witness off (CAP_SYS_ADMIN dropped) run COMMAND as root;"+
		" the last two run it as %s (SUDO_UID, SUDO_GID and SUDO_USER set, as sudo sets them), where the witness watches contents on demand, and with it off.\n\n", witnessUser)
	fmt.Fprintf(out, "| workload | bare | %s | %s | %s | %s | witness on / off | on demand / off |\n|---|---|---|---|---|---|---|---|\n", on.name, off.name, lazy.name, lazyOff.name)
	var notes []string
	if why != "" {
		notes = append(notes, fmt.Sprintf("%s, and with the witness off: n/a, %s.", lazy.name, why))
	}
	for _, w := range b.selected(workloads) {
		configs := []config{{name: "bare"}, on, off}
		if why == "" {
			configs = append(configs, lazy, lazyOff)
		}
		var meds [5]time.Duration
		for i, c := range configs {
			r, err := measure(w, c, b.runs)
			if err != nil {
				return fmt.Errorf("%s under %s: %w", w.name, c.name, err)
			}
			meds[i] = r.median
			if r.contentsSince != "" {
				notes = append(notes, fmt.Sprintf("%s, %s: contents watched since %s.", w.name, c.name, r.contentsSince))
			}
		}
		times := func(d time.Duration) string {
			return fmt.Sprintf("%s (%.2f×)", fmtDur(d), float64(d)/float64(meds[0]))
		}
		vs := func(a, b time.Duration) string {
			return fmt.Sprintf("%.2f× (%+.0f ms)", float64(a)/float64(b), float64(a-b)/float64(time.Millisecond))
		}
		lazyCell, lazyOffCell, lazyVs := "n/a", "n/a", "n/a"
		if why == "" {
			lazyCell, lazyOffCell, lazyVs = times(meds[3]), times(meds[4]), vs(meds[3], meds[4])
		}
		fmt.Fprintf(out, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", w.name, fmtDur(meds[0]),
			times(meds[1]), times(meds[2]), lazyCell, lazyOffCell, vs(meds[1], meds[2]), lazyVs)
	}
	if len(notes) > 0 {
		fmt.Fprintf(out, "\n%s\n", strings.Join(notes, "\n"))
	}
	return nil
}

// asUser is the configuration that runs COMMAND as the account name,
// with what it needs: a directory of its own under the temp root (0700:
// its reports, GOCACHE, GOPATH and XDG_CONFIG_HOME), the bench's two
// roots traversable (0711) to reach the project and the micro binary,
// and owner, which prepares each workload directory it writes: emptied,
// and given to it. why says why it cannot be measured, "" if it can.
func (b *bench) asUser(name string, audit func(string) []string) (c config, owner func(dir string) func() error, why string) {
	c = config{name: "writewatch --audit, COMMAND as a user (contents on demand)"}
	owner = clean
	u, err := user.Lookup(name)
	if err != nil {
		return c, owner, fmt.Sprintf("no account %s to run COMMAND as (%v)", name, err)
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err1 != nil || err2 != nil || uid == 0 {
		return c, owner, fmt.Sprintf("account %s is uid %s, gid %s", name, u.Uid, u.Gid)
	}
	home := filepath.Join(b.tmp, "user-"+name)
	for _, step := range []func() error{
		func() error { return os.Mkdir(home, 0o700) },
		func() error { return os.Chown(home, uid, gid) },
		func() error { return os.Chmod(b.tmp, 0o711) },
		func() error { return os.Chmod(filepath.Dir(b.proj), 0o711) },
		func() error { return os.Chmod(b.micro, 0o755) },
	} {
		if err := step(); err != nil {
			return c, owner, err.Error()
		}
	}
	c.prefix, c.jsonDir = audit, home
	c.env = []string{"SUDO_UID=" + u.Uid, "SUDO_GID=" + u.Gid, "SUDO_USER=" + name,
		"GOCACHE=" + filepath.Join(home, "gocache"), "GOPATH=" + filepath.Join(home, "gopath"), "XDG_CONFIG_HOME=" + filepath.Join(home, "config")}
	owner = func(dir string) func() error {
		return func() error {
			if err := clean(dir)(); err != nil {
				return err
			}
			return os.Chown(dir, uid, gid)
		}
	}
	return c, owner, ""
}

// checkWitness runs true under c and fails unless its report says the
// witness was active, or not, as active says, and that it watched
// contents as contents says ("from the start", "on demand"; "": either).
func (b *bench) checkWitness(c config, active bool, contents string) error {
	j := c.reportPath("writewatch-bench-witness")
	defer os.Remove(j)
	argv := append(c.prefix(j), "true")
	cmd := c.command(argv, b.proj)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %v: %s", strings.Join(argv, " "), err, out)
	}
	var rep struct {
		Witness struct {
			Active   bool   `json:"active"`
			Contents string `json:"contents"`
		} `json:"witness"`
	}
	data, err := os.ReadFile(j)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		return fmt.Errorf("%s: %w", j, err)
	}
	if rep.Witness.Active != active {
		return fmt.Errorf("%s: the report says witness active = %v, want %v", c.name, rep.Witness.Active, active)
	}
	if contents != "" && rep.Witness.Contents != contents {
		return fmt.Errorf("%s: the report says witness contents = %q, want %q", c.name, rep.Witness.Contents, contents)
	}
	return nil
}
