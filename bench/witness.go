package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// witnessTable measures what the filesystem witness (fanotify, package
// witness) costs: writewatch --audit as it runs as root, and with
// CAP_SYS_ADMIN dropped from its bounding set (setpriv), which turns the
// witness off and nothing else (the programs need only CAP_BPF and
// CAP_PERFMON). Each writewatch configuration's report is checked to say
// the witness was on, or off.
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
	if err := b.checkWitness(on, true); err != nil {
		return err
	}
	if err := b.checkWitness(off, false); err != nil {
		return err
	}
	nWrite, nRepeat := 1_000_000, 1_000_000
	if b.quick {
		nWrite, nRepeat = 50_000, 50_000
	}
	allowedDir := filepath.Join(b.tmp, "allowed")
	n := func(v int) string { return fmt.Sprintf("%d", v) }
	workloads := []workload{
		{name: "micro: writes allowed (" + n(nWrite) + ")", argv: []string{b.micro, "write", allowedDir, n(nWrite)}, dir: b.proj, prepare: clean(allowedDir)},
		{name: "micro: one path violated (" + n(nRepeat) + ")", argv: []string{b.micro, "write", b.out, n(nRepeat)}, dir: b.proj, prepare: clean(b.out), violates: true},
		b.goSuiteWorkload(),
		{name: "start-up: true", argv: []string{"true"}, dir: b.proj},
	}
	fmt.Fprintf(out, "\nThe filesystem witness's cost: writewatch --audit with the witness, and without it (CAP_SYS_ADMIN dropped).\n\n")
	fmt.Fprintf(out, "| workload | bare | %s | %s | witness on / off |\n|---|---|---|---|---|\n", on.name, off.name)
	for _, w := range b.selected(workloads) {
		var meds [3]time.Duration
		for i, c := range []config{{name: "bare"}, on, off} {
			r, err := measure(w, c, b.runs)
			if err != nil {
				return fmt.Errorf("%s under %s: %w", w.name, c.name, err)
			}
			meds[i] = r.median
		}
		fmt.Fprintf(out, "| %s | %s | %s (%.2f×) | %s (%.2f×) | %.2f× (%+.0f ms) |\n", w.name, fmtDur(meds[0]),
			fmtDur(meds[1]), float64(meds[1])/float64(meds[0]), fmtDur(meds[2]), float64(meds[2])/float64(meds[0]),
			float64(meds[1])/float64(meds[2]), float64(meds[1]-meds[2])/float64(time.Millisecond))
	}
	return nil
}

// checkWitness runs true under c and fails unless its report says the
// witness was active, or not, as want says.
func (b *bench) checkWitness(c config, want bool) error {
	j := filepath.Join(os.TempDir(), fmt.Sprintf("writewatch-bench-witness-%d.json", os.Getpid()))
	defer os.Remove(j)
	argv := append(c.prefix(j), "true")
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = b.proj
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %v: %s", strings.Join(argv, " "), err, out)
	}
	var rep struct {
		Witness struct {
			Active bool `json:"active"`
		} `json:"witness"`
	}
	data, err := os.ReadFile(j)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		return fmt.Errorf("%s: %w", j, err)
	}
	if rep.Witness.Active != want {
		return fmt.Errorf("%s: the report says witness active = %v, want %v", c.name, rep.Witness.Active, want)
	}
	return nil
}
