package main

import (
	"cmp"
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
// CAP_PERFMON). Each configuration's report is checked to say the
// witness was on, with contents on demand, or off. The micro workloads
// are half the main table's size.
func (b *bench) witnessTable(out io.Writer) error {
	if _, err := exec.LookPath("setpriv"); err != nil {
		fmt.Fprintln(out, "\nThe filesystem witness's cost: not measured (setpriv, from util-linux, not found).")
		return nil
	}
	audit := func(j string) []string { return []string{b.ww, "--audit", "--quiet", "--json", j, "--"} }
	on := config{name: "writewatch --audit (witness on, contents on demand)", prefix: audit}
	off := config{name: "writewatch --audit, witness off", prefix: func(j string) []string {
		return append([]string{"setpriv", "--bounding-set", "-sys_admin"}, audit(j)...)
	}}
	if err := b.checkWitness(on, true, "on demand"); err != nil {
		return err
	}
	if err := b.checkWitness(off, false, ""); err != nil {
		return err
	}
	nWrite, nRepeat := 250_000, 250_000
	if b.quick {
		nWrite, nRepeat = 50_000, 50_000
	}
	allowedDir := filepath.Join(b.tmp, "allowed")
	workloads := []workload{
		b.microRow(workload{name: "micro: writes allowed (" + n(nWrite) + ")", argv: []string{b.micro, "write", allowedDir, n(nWrite)}, dir: b.proj, prepare: clean(allowedDir)}, nWrite),
		b.microRow(workload{name: "micro: one path violated (" + n(nRepeat) + ")", argv: []string{b.micro, "write", b.out, n(nRepeat)}, dir: b.proj, prepare: clean(b.out), violates: true}, nRepeat),
		b.goSuiteWorkload(),
		{name: "start-up: true", argv: []string{"true"}, dir: b.proj},
	}
	fmt.Fprintf(out, "\nThe filesystem witness's cost, writewatch --audit run as root, COMMAND too: with the witness on, and off (CAP_SYS_ADMIN dropped).\n\n")
	fmt.Fprintf(out, "| workload | bare | %s | %s | witness on / off |\n|---|---|---|---|---|\n", on.name, off.name)
	var notes []string
	for _, w := range b.selected(workloads) {
		rs, err := measure([]trial{{w, config{name: "bare"}}, {w, on}, {w, off}}, cmp.Or(w.runs, b.runs))
		if err != nil {
			return err
		}
		var meds [3]time.Duration
		for i, r := range rs {
			meds[i] = r.median
			if r.contentsSince != "" {
				notes = append(notes, fmt.Sprintf("%s, %s: contents watched since %s.", w.name, r.config, r.contentsSince))
			}
		}
		times := func(d time.Duration) string {
			return fmt.Sprintf("%s (%.2f×)", fmtDur(d), float64(d)/float64(meds[0]))
		}
		fmt.Fprintf(out, "| %s | %s | %s | %s | %.2f× (%+.0f ms) |\n", w.name, fmtDur(meds[0]),
			times(meds[1]), times(meds[2]), float64(meds[1])/float64(meds[2]), float64(meds[1]-meds[2])/float64(time.Millisecond))
	}
	if len(notes) > 0 {
		fmt.Fprintf(out, "\n%s\n", strings.Join(notes, "\n"))
	}
	return nil
}

// checkWitness runs true under c and fails unless its report says the
// witness was active, or not, as active says, and that it watched
// contents as contents says ("on demand"; "": either).
func (b *bench) checkWitness(c config, active bool, contents string) error {
	j := reportPath("writewatch-bench-witness")
	defer os.Remove(j)
	argv := append(c.prefix(j), "true")
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = b.proj
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
