// Command bench measures writewatch's cost, in one run on one machine:
// each workload bare, under `writewatch --audit`, under `writewatch
// --enforce` (when this build has it), under `writewatch --sandbox`
// (where the sandbox can be made) and under `strace -f`, the median of
// several runs each, and prints a Markdown table of times and ratios with
// writewatch's peak memory and lost events. `make bench` runs it.
//
//	go run ./bench [-runs 5] [-writewatch bin/writewatch] [-quick] [-only start-up]
//
// With -vm (make vmbench), it runs in a VM that has no Go toolchain: the
// helper programs are built beforehand (-micro, -floor), and only the
// rows that need no go command are run, at -quick's sizes: the micro
// rows and start-up. There, and wherever fentry loads, the empty hooks
// of each observation path (bench/floor -hooks) are columns of their own.
package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

type config struct {
	name   string
	prefix func(jsonPath string) []string // nil: bare
}

// reportPath is where a report goes, in the temp dir, named after name.
func reportPath(name string) string {
	return filepath.Join(os.TempDir(), fmt.Sprintf("%s-%d.json", name, os.Getpid()))
}

type workload struct {
	name string
	argv []string
	// small is argv at a hundredth of the size: strace stops on every
	// syscall and would take minutes at full size, so it is timed at this
	// size against bare at this size (the ratio is per operation). The
	// warm-up run, not timed, runs it too.
	small []string
	// runs, when not 0, is how many timed runs it takes, rather than
	// -runs: the micro rows' runs take seconds each, and their medians
	// move less than a short row's.
	runs    int
	dir     string
	prepare func() error // before every run, not timed
	// violates: the workload writes outside the allowlist, so it cannot
	// run to completion under --enforce.
	violates bool
	// inside: timed by bench/micro itself (MICRO_ELAPSED), its loop
	// alone, rather than from outside with the tool's start-up.
	inside  bool
	targets []target
}

// The columns that targets are set for.
const (
	audit   = "writewatch --audit"
	sandbox = "writewatch --sandbox"
)

// A target is what one configuration's time must meet on a workload's
// row, against another configuration's.
type target struct {
	of, against string // the configurations' names
	text        string // as printed
	// check says what r, against ref, came to, and whether that meets
	// the target; nil: the target is not checked.
	check func(r, ref result) (got string, met bool)
}

// vsBare is writewatch --audit's target against bare.
func vsBare(text string, check func(r, ref result) (string, bool)) target {
	return target{of: audit, against: "bare", text: text, check: check}
}

// vsAudit is writewatch --sandbox's target against writewatch --audit.
func vsAudit(text string, check func(r, ref result) (string, bool)) target {
	return target{of: sandbox, against: audit, text: "--sandbox " + text, check: check}
}

type result struct {
	config   string
	median   time.Duration
	ratio    float64
	rssMiB   float64
	lost     uint64
	failures int
	small    bool // timed at a hundredth of the workload's size
	// exit is the command's exit status in the last run, and stderr what
	// it and the tool wrote there.
	exit   int
	stderr string
	// contentsSince is what made the witness watch all contents, in a
	// run that watched them on demand (the report's contents_since).
	contentsSince string
}

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// bench is one benchmark run: its options, binaries and directories.
type bench struct {
	runs  int
	quick bool
	vm    bool   // no go command: micro rows and start-up only, no witness table
	only  string // run only the workloads whose name contains it
	ww    string // the writewatch binary
	micro string // bench/micro, built
	floor string // bench/floor, built
	proj  string // the project the workloads run in
	out   string // a directory outside the project's allowlist
	many  string // another, for the files of "different paths violated"
	tmp   string // a directory under the temp dir, which it allows
}

func run(out io.Writer) error {
	runs := flag.Int("runs", 5, "timed runs per workload and configuration (the median is shown)")
	ww := flag.String("writewatch", "bin/writewatch", "the writewatch binary")
	quick := flag.Bool("quick", false, "smaller workloads, for a smoke test")
	only := flag.String("only", "", "run only the workloads whose name contains this text (\"start-up\")")
	vm := flag.Bool("vm", false, "in a VM without Go (make vmbench): -quick's sizes, the rows that need no go command, no witness table")
	micro := flag.String("micro", "", "bench/micro, built (default: built now)")
	floor := flag.String("floor", "", "bench/floor, built (default: built now)")
	flag.Parse()

	b := &bench{runs: *runs, quick: *quick || *vm, vm: *vm, only: *only, micro: *micro, floor: *floor}
	cleanup, err := b.setup(*ww)
	defer cleanup()
	if err != nil {
		return err
	}
	configs := b.configs()
	start := time.Now()
	fmt.Fprintf(out, "writewatch benchmark: median of %d runs each, %d for the micro rows (one warm-up run, at a hundredth of a micro row's size, not counted; the configurations of a workload take turns), %s\n\n",
		b.runs, b.microRuns(), time.Now().Format("2006-01-02"))
	if b.vm {
		fmt.Fprintf(out, "The micro rows are the time of their loop alone, measured by bench/micro itself: each tool's start-up is left out (the start-up row has it).\n\n")
	}
	fmt.Fprintf(out, "| workload | %s | target | peak RSS | lost |\n", strings.Join(names(configs), " | "))
	fmt.Fprintf(out, "|---|%s---|---|---|\n", strings.Repeat("---|", len(configs)))
	failed := false
	for _, w := range b.selected(b.workloads()) {
		results, err := b.measureAll(w, configs)
		if err != nil {
			return err
		}
		line, missed := row(w, results)
		fmt.Fprint(out, line)
		failed = failed || missed
	}
	fmt.Fprintf(out, "\nempty hooks (floor): empty programs on the same syscall tracepoints, the kernel's own cost of watching syscalls.\n")
	for _, c := range configs {
		if h, ok := strings.CutPrefix(c.name, "empty fentry: "); ok {
			fmt.Fprintf(out, "empty fentry: %s: %s\n", h, fentryHooks[h])
		}
	}
	fmt.Fprintf(out, "strace stops on every syscall: on micro workloads it is timed at N/100, against bare at N/100.\n")
	if err := b.programTable(out, b.selected(b.workloads())); err != nil {
		return err
	}
	if !b.vm {
		if err := b.witnessTable(out); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "\nTook %s. Reproduce with `make bench`.\n", time.Since(start).Round(time.Second))
	if failed {
		fmt.Fprintln(out, "Some targets were missed (see the table).")
	}
	return nil
}

// setup finds writewatch, makes the directories and builds the helper
// programs. The function it returns removes what it made.
func (b *bench) setup(ww string) (cleanup func(), err error) {
	var dirs []string
	cleanup = func() {
		for _, d := range dirs {
			os.RemoveAll(d)
		}
	}
	if b.ww, err = filepath.Abs(ww); err != nil {
		return cleanup, err
	}
	if _, err := os.Stat(b.ww); err != nil {
		return cleanup, fmt.Errorf("%s: %w (run make build)", b.ww, err)
	}
	base, err := os.MkdirTemp("/var/tmp", "writewatch-bench-")
	if err != nil {
		return cleanup, err
	}
	dirs = append(dirs, base)
	if b.tmp, err = os.MkdirTemp("", "writewatch-bench-"); err != nil {
		return cleanup, err
	}
	dirs = append(dirs, b.tmp)
	b.proj, b.out, b.many = filepath.Join(base, "proj"), filepath.Join(base, "out"), filepath.Join(base, "many")
	for _, d := range []string{b.proj, b.out, b.many} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return cleanup, err
		}
	}
	// The project allows nothing: only the defaults (temp dir, caches).
	if err := os.WriteFile(filepath.Join(b.proj, ".writewatch.yaml"), []byte("allow: []\n"), 0o644); err != nil {
		return cleanup, err
	}
	for _, h := range []struct {
		bin *string
		pkg string
	}{{&b.micro, "./bench/micro"}, {&b.floor, "./bench/floor"}} {
		if *h.bin != "" {
			continue
		}
		*h.bin = filepath.Join(b.tmp, filepath.Base(h.pkg))
		if out, err := exec.Command("go", "build", "-o", *h.bin, h.pkg).CombinedOutput(); err != nil {
			return cleanup, fmt.Errorf("build %s: %v\n%s", h.pkg, err, out)
		}
	}
	return cleanup, nil
}

// configs are the ways each workload runs: bare, and under each tool.
func (b *bench) configs() []config {
	configs := []config{
		{name: "bare"},
		// The kernel's cost of hooking every syscall, with empty programs:
		// the floor under any tool that watches syscall tracepoints.
		{name: "empty hooks (floor)", prefix: func(string) []string { return []string{b.floor} }},
	}
	// Where fentry loads, the empty hooks of a path without syscall
	// tracepoints too.
	for _, h := range []string{"dispatch", "vfs"} {
		if exec.Command(b.floor, "-hooks", h, "true").Run() == nil {
			configs = append(configs, config{name: "empty fentry: " + h, prefix: func(string) []string { return []string{b.floor, "-hooks", h} }})
		}
	}
	configs = append(configs, config{name: audit, prefix: func(j string) []string {
		return []string{b.ww, "--audit", "--quiet", "--json", j, "--"}
	}})
	if help, _ := exec.Command(b.ww, "--help").CombinedOutput(); strings.Contains(string(help), "-enforce") {
		configs = append(configs, config{name: "writewatch --enforce", prefix: func(j string) []string {
			return []string{b.ww, "--enforce", "--quiet", "--json", j, "--"}
		}})
	}
	// With --audit, so that it exits as COMMAND does, as the bare run.
	sb := config{name: sandbox, prefix: func(j string) []string {
		return []string{b.ww, "--audit", "--sandbox", "--quiet", "--json", j, "--"}
	}}
	j := reportPath("writewatch-bench-sandbox")
	argv := append(sb.prefix(j), "true")
	if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err == nil {
		configs = append(configs, sb)
	} else {
		fmt.Fprintf(os.Stderr, "bench: writewatch --sandbox cannot run here (%v: %s): its column is left out\n", err, strings.TrimSpace(string(out)))
	}
	os.Remove(j)
	if _, err := exec.LookPath("strace"); err == nil {
		configs = append(configs, config{name: "strace -f", prefix: func(string) []string {
			return []string{"strace", "-f", "-qq", "-e", "trace=%file", "-o", "/dev/null", "--"}
		}})
	} else {
		fmt.Fprintln(os.Stderr, "bench: strace not found (apt-get install strace): its column is left out")
	}
	return configs
}

// workloads are what is timed, each with its targets.
func (b *bench) workloads() []workload {
	nWrite, nMany, nRead, nRepeat := 1_000_000, 20_000, 2_000_000, 1_000_000
	// The file-heavy tests of the Go distribution's own packages (all of
	// os takes about 30 s here, too long to run 6 times in 5 ways).
	realPkgs := []string{"-run", "TestRemove|TestMkdir|TestReadDir|TestOpen|TestCreate|TestRename|TestSymlink|TestLink|TestChmod|TestChtimes|TestTruncate|TestWrite|TestRead|TestStat|TestWalk|TestGlob|TestFS|TestCopyFS|TestDirFS",
		"os", "io/fs", "path/filepath", "archive/zip"}
	realName := "-run 'TestRemove|TestMkdir|…|TestDirFS' os io/fs path/filepath archive/zip"
	if b.quick {
		nWrite, nMany, nRead, nRepeat = 50_000, 5_000, 100_000, 50_000
		realPkgs = []string{"io/fs"}
		realName = strings.Join(realPkgs, " ")
	}
	allowedDir := filepath.Join(b.tmp, "allowed")
	// The micro rows' targets are over bare on a machine whose syscall
	// tracepoints cost what this one's do (the empty hooks' column: 1.09
	// to 1.16×); the real suites', over bare anywhere.
	workloads := []workload{
		b.microRow(workload{name: "micro: writes allowed (" + n(nWrite) + ")", argv: []string{b.micro, "write", allowedDir, n(nWrite)},
			prepare: clean(allowedDir), targets: []target{vsBare("≤ 1.30", ratioAtMost(1.30))}}, nWrite),
		b.microRow(workload{name: "micro: read-only opens (" + n(nRead) + ")", argv: []string{b.micro, "read", "/etc/hostname", n(nRead)},
			targets: []target{vsBare("≤ 1.20", ratioAtMost(1.20))}}, nRead),
		b.microRow(workload{name: "micro: one path violated (" + n(nRepeat) + ")", argv: []string{b.micro, "write", b.out, n(nRepeat)},
			prepare: clean(b.out), violates: true, targets: []target{vsBare("≤ 1.5, no loss", func(r, ref result) (string, bool) {
				if r.lost > 0 {
					return fmt.Sprintf("lost %d", r.lost), false
				}
				return ratioAtMost(1.5)(r, ref)
			})}}, nRepeat),
		// Its files are made once and left in place; each run writes
		// them again. On a file system without a journal (this
		// machine's), ext4 passes over the inodes freed in the last
		// minute when it allocates one: removing the directory with its
		// 20,000 files and making them again took 7 s bare, in time
		// growing with N²; writing them again takes 0.15 s.
		b.microRow(workload{name: "micro: different paths violated (" + n(nMany) + ")", argv: []string{b.micro, "write-many", b.many, n(nMany)},
			prepare: b.made(nMany), violates: true, targets: []target{vsBare("(none)", nil)}}, nMany),
		// The os tests try to create files in directories that do not
		// exist (/_not_exists_/...): attempts outside the allowlist, which
		// --enforce refuses, failing those tests.
		{name: "real: go test -count=1 " + realName, argv: append([]string{"go", "test", "-count=1"}, realPkgs...), violates: true,
			targets: []target{vsBare("≤ 1.03", ratioAtMost(1.03)), vsAudit("≤ 1.05× --audit", ratioAtMost(1.05))}},
		{name: "start-up: true", argv: []string{"true"}, targets: []target{
			vsBare("≤ bare + 60 ms", plusAtMost(60*time.Millisecond)), vsAudit("≤ --audit + 30 ms", plusAtMost(30*time.Millisecond))}},
	}
	// An eighth of the read-only opens: the ratio is what they compare,
	// and at the full size the two rows took a quarter of the run.
	workloads = slices.Insert(workloads, 2, b.crossReads(nRead/8)...)
	if b.vm {
		workloads = slices.DeleteFunc(workloads, func(w workload) bool { return w.argv[0] == "go" })
		// In a VM under emulation, a tool's start-up takes seconds, as
		// long as a micro row (the start-up row has it).
		for i := range workloads {
			workloads[i].inside = workloads[i].small != nil
		}
	}
	for i := range workloads {
		workloads[i].dir = b.proj
	}
	if !b.vm {
		workloads = append(workloads, b.goSuiteWorkload())
	}
	return workloads
}

// fentryHooks says where each empty fentry column's programs are (bench/floor -hooks).
var fentryHooks = map[string]string{
	"dispatch": "at the entry and the exit of the function every syscall is dispatched through",
	"vfs":      "at the exit of vfs_open and the entry of the security checks of every other change writewatch reports",
}

func n(v int) string { return fmt.Sprintf("%d", v) }

// microRow is w, a micro workload whose argv ends in its size, with its argv
// at a hundredth of the size as well, timed microRuns times.
func (b *bench) microRow(w workload, size int) workload {
	w.small = append(slices.Clone(w.argv[:len(w.argv)-1]), n(max(size/100, 1)))
	w.runs = b.microRuns()
	return w
}

// microRuns is how many timed runs a micro row takes: three, or fewer
// when -runs asks for fewer.
func (b *bench) microRuns() int { return min(b.runs, 3) }

// selected are the workloads of ws that -only selects.
func (b *bench) selected(ws []workload) []workload {
	return slices.DeleteFunc(ws, func(w workload) bool { return !strings.Contains(w.name, b.only) })
}

// made makes the n files of micro write-many in b.many, untimed, unless
// they are there: every timed run writes files that exist.
func (b *bench) made(n int) func() error {
	return func() error {
		if _, err := os.Stat(filepath.Join(b.many, fmt.Sprintf("micro-%d.txt", n-1))); err == nil {
			return nil
		}
		if out, err := exec.Command(b.micro, "write-many", b.many, fmt.Sprint(n)).CombinedOutput(); err != nil {
			return fmt.Errorf("micro write-many: %v\n%s", err, out)
		}
		return nil
	}
}

// clean empties dir before a run.
func clean(dir string) func() error {
	return func() error {
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		// Flush the removal now, so that its writeback does not land in
		// the timed run.
		syscall.Sync()
		return nil
	}
}

// measureAll times w under each configuration. strace is timed at a
// hundredth of a micro workload's size, against bare at that size.
func (b *bench) measureAll(w workload, configs []config) ([]result, error) {
	var (
		trials []trial
		at     []int  // configs[i]'s trial, -1 when not run
		baseAt []int  // the trial its ratio is to
		small  []bool // timed at a hundredth of the size
	)
	bare := -1
	for _, c := range configs {
		if w.violates && strings.Contains(c.name, "enforce") {
			at, baseAt, small = append(at, -1), append(baseAt, -1), append(small, false)
			continue
		}
		base, timed := bare, w
		cut := strings.HasPrefix(c.name, "strace") && w.small != nil && !b.quick
		if cut {
			timed.argv = w.small
			base = len(trials)
			trials = append(trials, trial{w: timed, c: config{name: "bare"}})
		}
		if c.prefix == nil {
			bare, base = len(trials), len(trials)
		}
		at, baseAt, small = append(at, len(trials)), append(baseAt, base), append(small, cut)
		trials = append(trials, trial{w: timed, c: c})
	}
	rs, err := measure(trials, cmp.Or(w.runs, b.runs))
	if err != nil {
		return nil, err
	}
	var results []result
	for i, c := range configs {
		if at[i] < 0 {
			results = append(results, result{config: c.name, failures: -1})
			continue
		}
		r := rs[at[i]]
		r.small = small[i]
		r.ratio = float64(r.median) / float64(rs[baseAt[i]].median)
		results = append(results, r)
	}
	return results, nil
}

// row is w's line of the table, and whether it missed a target.
func row(w workload, results []result) (line string, missed bool) {
	var (
		cells     []string
		rss, lost string
		byName    = map[string]result{}
	)
	for _, r := range results {
		byName[r.config] = r
		switch {
		case r.failures < 0:
			cells = append(cells, "n/a (blocked)")
			continue
		case r.config == "bare":
			cells = append(cells, fmtDur(r.median))
			continue
		}
		note := ""
		if r.small {
			note = " at N/100"
		}
		cells = append(cells, fmt.Sprintf("%s%s (%.2f×)", fmtDur(r.median), note, r.ratio))
		if r.config == audit {
			rss, lost = fmt.Sprintf("%.1f MiB", r.rssMiB), fmt.Sprintf("%d", r.lost)
		}
	}
	var targets []string
	for _, t := range w.targets {
		r, ok := byName[t.of]
		ref, refOK := byName[t.against]
		switch {
		case !ok || r.failures < 0 || !refOK || ref.failures < 0:
			// Its column is not in the table, or not run on this row.
		case t.check == nil:
			targets = append(targets, t.text)
		default:
			got, met := t.check(r, ref)
			switch {
			case !met:
				targets = append(targets, t.text+" **missed: "+got+"**")
				missed = true
			case t.against == "bare":
				// The cell shows the ratio to bare.
				targets = append(targets, t.text+" met")
			default:
				targets = append(targets, t.text+" met ("+got+")")
			}
		}
	}
	// Every row's: writewatch's peak memory.
	if r, ok := byName[audit]; ok && r.rssMiB > 64 {
		targets = append(targets, fmt.Sprintf("**missed: RSS %.0f MiB > 64**", r.rssMiB))
		missed = true
	}
	name := strings.ReplaceAll(w.name, "|", `\|`) // Markdown cells
	return fmt.Sprintf("| %s | %s | %s | %s | %s |\n", name, strings.Join(cells, " | "), strings.Join(targets, "; "), rss, lost), missed
}

// ratioAtMost: r's time is at most limit times ref's.
func ratioAtMost(limit float64) func(r, ref result) (string, bool) {
	return func(r, ref result) (string, bool) {
		ratio := float64(r.median) / float64(ref.median)
		return fmt.Sprintf("%.2f×", ratio), ratio <= limit
	}
}

// plusAtMost: r's time is at most ref's plus d.
func plusAtMost(d time.Duration) func(r, ref result) (string, bool) {
	return func(r, ref result) (string, bool) {
		return fmt.Sprintf("%+.0f ms", float64(r.median-ref.median)/float64(time.Millisecond)), r.median-ref.median <= d
	}
}

// A trial is a workload under a configuration.
type trial struct {
	w workload
	c config
}

// measure runs each trial once to warm up (at a hundredth of its size,
// when it has one), then runs rounds of every trial in turn, so that
// whatever drifts on the machine meanwhile falls on all of them alike, and
// returns each one's median wall time with writewatch's own figures from
// its report. The first trial is the command run bare, whose exit status
// the others' are checked against.
func measure(trials []trial, runs int) ([]result, error) {
	if len(trials) == 0 || trials[0].c.prefix != nil {
		return nil, errors.New("measure: the first trial must be the command run bare")
	}
	res := make([]result, len(trials))
	times := make([][]time.Duration, len(trials))
	for i, t := range trials {
		res[i].config = t.c.name
	}
	for round := 0; round <= runs; round++ {
		for i, t := range trials {
			if round == 0 && t.w.small != nil {
				t.w.argv = t.w.small
			}
			d, err := runOnce(t.w, t.c, &res[i])
			if err != nil {
				return nil, fmt.Errorf("%s under %s: %w", t.w.name, t.c.name, err)
			}
			// writewatch changing how the command ended (a test binary
			// it made fault) is not measured; it is a bug. (strace -f
			// fails some of the os package's tests: its ptrace stops
			// show.)
			if strings.Contains(t.c.name, "writewatch") && res[i].exit != res[0].exit {
				return nil, fmt.Errorf("%s: exit status %d under %s, %d bare: writewatch changed the command's outcome\n%s",
					t.w.name, res[i].exit, t.c.name, res[0].exit, lastLines(res[i].stderr, 20))
			}
			if round > 0 {
				times[i] = append(times[i], d)
			}
		}
	}
	for i := range res {
		slices.Sort(times[i])
		res[i].median = times[i][len(times[i])/2]
	}
	return res, nil
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}

// runOnce runs w under c, timed, and adds writewatch's figures from its
// report to res.
func runOnce(w workload, c config, res *result) (time.Duration, error) {
	if w.prepare != nil {
		if err := w.prepare(); err != nil {
			return 0, err
		}
	}
	jsonPath := reportPath("writewatch-bench")
	argv := w.argv
	if c.prefix != nil {
		argv = append(c.prefix(jsonPath), w.argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = w.dir
	cmd.Stdout = io.Discard
	var stderr strings.Builder
	cmd.Stderr = &stderr
	elapsed := reportPath("writewatch-bench-elapsed")
	if w.inside {
		cmd.Env = append(os.Environ(), "MICRO_ELAPSED="+elapsed)
		defer os.Remove(elapsed)
	}
	t0 := time.Now()
	err := cmd.Run()
	d := time.Since(t0)
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return 0, err
	}
	if err != nil && !w.violates {
		return 0, fmt.Errorf("exit %v: %s", err, stderr.String())
	}
	res.exit, res.stderr = cmd.ProcessState.ExitCode(), stderr.String()
	if w.inside {
		data, err := os.ReadFile(elapsed)
		if err != nil {
			return 0, fmt.Errorf("bench/micro's own time: %w", err)
		}
		ns, err := strconv.ParseInt(string(data), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("bench/micro's own time: %w", err)
		}
		d = time.Duration(ns)
	}
	if c.prefix != nil && strings.Contains(c.name, "writewatch") {
		var rep struct {
			LostEvents uint64 `json:"lost_events"`
			PeakRSS    uint64 `json:"peak_rss_bytes"`
			Witness    struct {
				ContentsSince string `json:"contents_since"`
			} `json:"witness"`
		}
		if data, err := os.ReadFile(jsonPath); err == nil && json.Unmarshal(data, &rep) == nil {
			res.lost = max(res.lost, rep.LostEvents)
			res.rssMiB = max(res.rssMiB, float64(rep.PeakRSS)/(1<<20))
			if rep.Witness.ContentsSince != "" {
				res.contentsSince = rep.Witness.ContentsSince
			}
		}
		os.Remove(jsonPath)
	}
	return d, nil
}

func names(cs []config) []string {
	var n []string
	for _, c := range cs {
		n = append(n, c.name)
	}
	return n
}

func fmtDur(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
	case d < time.Second:
		return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}
