// Command bench measures writewatch's cost, in one run on one machine:
// each workload bare, under `writewatch --audit`, under `writewatch
// --enforce` (when this build has it) and under `strace -f`, the median of
// several runs each, and prints a Markdown table of times and ratios with
// writewatch's peak memory and lost events. `make bench` runs it.
//
//	go run ./bench [-runs 5] [-writewatch bin/writewatch] [-quick]
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

type config struct {
	name   string
	prefix func(jsonPath string) []string // nil: bare
}

type workload struct {
	name string
	argv []string
	// small is argv at a hundredth of the size: strace stops on every
	// syscall and would take minutes at full size, so it is timed at this
	// size against bare at this size (the ratio is per operation).
	small   []string
	dir     string
	prepare func() error // before every run, not timed
	// violates: the workload writes outside the allowlist, so it cannot
	// run to completion under --enforce.
	violates bool
	target   string // the targets it must meet, as printed
	check    func(r result) string
}

type result struct {
	config   string
	median   time.Duration
	ratio    float64
	rssMiB   float64
	lost     uint64
	failures int
	small    bool // timed at a hundredth of the workload's size
}

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(out io.Writer) error {
	runs := flag.Int("runs", 5, "timed runs per workload and configuration (the median is shown)")
	ww := flag.String("writewatch", "bin/writewatch", "the writewatch binary")
	quick := flag.Bool("quick", false, "smaller workloads, for a smoke test")
	flag.Parse()

	wwPath, err := filepath.Abs(*ww)
	if err != nil {
		return err
	}
	if _, err := os.Stat(wwPath); err != nil {
		return fmt.Errorf("%s: %w (run make build)", wwPath, err)
	}
	base, err := os.MkdirTemp("/var/tmp", "writewatch-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(base)
	tmp, err := os.MkdirTemp("", "writewatch-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	proj, outDir := filepath.Join(base, "proj"), filepath.Join(base, "out")
	for _, d := range []string{proj, outDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	// The project allows nothing: only the defaults (temp dir, caches).
	if err := os.WriteFile(filepath.Join(proj, ".writewatch.yaml"), []byte("allow: []\n"), 0o644); err != nil {
		return err
	}
	micro, floor := filepath.Join(tmp, "micro"), filepath.Join(tmp, "floor")
	for bin, pkg := range map[string]string{micro: "./bench/micro", floor: "./bench/floor"} {
		if b, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
			return fmt.Errorf("build %s: %v\n%s", pkg, err, b)
		}
	}

	configs := []config{
		{name: "bare"},
		// The kernel's cost of hooking every syscall, with empty programs:
		// the floor under any tool that watches syscall tracepoints.
		{name: "empty hooks (floor)", prefix: func(string) []string { return []string{floor} }},
		{name: "writewatch --audit", prefix: func(j string) []string { return []string{wwPath, "--audit", "--quiet", "--json", j, "--"} }},
	}
	if help, _ := exec.Command(wwPath, "--help").CombinedOutput(); strings.Contains(string(help), "-enforce") {
		configs = append(configs, config{name: "writewatch --enforce", prefix: func(j string) []string {
			return []string{wwPath, "--enforce", "--quiet", "--json", j, "--"}
		}})
	}
	if _, err := exec.LookPath("strace"); err == nil {
		configs = append(configs, config{name: "strace -f", prefix: func(string) []string {
			return []string{"strace", "-f", "-qq", "-e", "trace=%file", "-o", "/dev/null", "--"}
		}})
	} else {
		fmt.Fprintln(os.Stderr, "bench: strace not found (apt-get install strace): its column is left out")
	}

	nWrite, nMany, nRead, nRepeat := 1_000_000, 20_000, 2_000_000, 1_000_000
	// The file-heavy tests of the Go distribution's own packages (all of
	// os takes about 30 s here, too long to run 6 times in 5 ways).
	realPkgs := []string{"-run", "TestRemove|TestMkdir|TestReadDir|TestOpen|TestCreate|TestRename|TestSymlink|TestLink|TestChmod|TestChtimes|TestTruncate|TestWrite|TestRead|TestStat|TestWalk|TestGlob|TestFS|TestCopyFS|TestDirFS",
		"os", "io/fs", "path/filepath", "archive/zip"}
	if *quick {
		nWrite, nMany, nRead, nRepeat = 50_000, 5_000, 100_000, 50_000
		realPkgs = []string{"io/fs"}
	}
	realName := strings.Join(realPkgs, " ")
	if !*quick {
		realName = "-run 'TestRemove|TestMkdir|…|TestDirFS' os io/fs path/filepath archive/zip"
	}
	allowedDir := filepath.Join(tmp, "allowed")
	clean := func(dir string) func() error {
		return func() error {
			if err := os.RemoveAll(dir); err != nil {
				return err
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			// Flush the removal now, so that its writeback does not land
			// in the timed run.
			syscall.Sync()
			return nil
		}
	}
	n := func(v int) string { return fmt.Sprintf("%d", v) }
	hundredth := func(argv []string, v int) []string {
		return append(slices.Clone(argv[:len(argv)-1]), n(max(v/100, 1)))
	}
	workloads := []workload{
		{name: "micro: writes allowed (" + n(nWrite) + ")", argv: []string{micro, "write", allowedDir, n(nWrite)},
			prepare: clean(allowedDir), target: "≤ 1.15", check: ratioAtMost(1.15)},
		{name: "micro: read-only opens (" + n(nRead) + ")", argv: []string{micro, "read", "/etc/hostname", n(nRead)},
			target: "≤ 1.05", check: ratioAtMost(1.05)},
		{name: "micro: one path violated (" + n(nRepeat) + ")", argv: []string{micro, "write", outDir, n(nRepeat)},
			prepare: clean(outDir), violates: true, target: "≤ 1.5, no loss", check: func(r result) string {
				if r.lost > 0 {
					return fmt.Sprintf("lost %d", r.lost)
				}
				return ratioAtMost(1.5)(r)
			}},
		{name: "micro: different paths violated (" + n(nMany) + ")", argv: []string{micro, "write-many", outDir, n(nMany)},
			prepare: clean(outDir), violates: true, target: "(none)"},
		// The os tests try to create files in directories that do not
		// exist (/_not_exists_/...): attempts outside the allowlist, which
		// --enforce refuses, failing those tests.
		{name: "real: go test -count=1 " + realName, argv: append([]string{"go", "test", "-count=1"}, realPkgs...), violates: true,
			target: "≤ 1.03", check: ratioAtMost(1.03)},
		{name: "start-up: true", argv: []string{"true"}, target: "≤ bare + 150 ms", check: func(r result) string {
			return ""
		}},
	}

	start := time.Now()
	fmt.Fprintf(out, "writewatch benchmark: median of %d runs each (one warm-up run not counted), %s\n\n", *runs, time.Now().Format("2006-01-02"))
	fmt.Fprintf(out, "| workload | %s | target | peak RSS | lost |\n", strings.Join(names(configs), " | "))
	fmt.Fprintf(out, "|---|%s---|---|---|\n", strings.Repeat("---|", len(configs)))
	failed := false
	for i := range workloads {
		w := &workloads[i]
		if strings.HasPrefix(w.name, "micro") {
			var size int
			fmt.Sscan(w.argv[len(w.argv)-1], &size)
			w.small = hundredth(w.argv, size)
		}
	}
	for _, w := range workloads {
		w.dir = proj
		var results []result
		var bare time.Duration
		for _, c := range configs {
			if w.violates && strings.Contains(c.name, "enforce") {
				results = append(results, result{config: c.name, failures: -1})
				continue
			}
			base := bare
			if strings.HasPrefix(c.name, "strace") && w.small != nil && !*quick {
				small := w
				small.argv = w.small
				sb, err := measure(small, config{name: "bare"}, *runs)
				if err != nil {
					return fmt.Errorf("%s bare at a tenth: %w", w.name, err)
				}
				base = sb.median
				w.argv, w.small = w.small, w.argv
			}
			r, err := measure(w, c, *runs)
			if w.small != nil && strings.HasPrefix(c.name, "strace") && !*quick {
				w.argv, w.small = w.small, w.argv
				r.small = true
			}
			if err != nil {
				return fmt.Errorf("%s under %s: %w", w.name, c.name, err)
			}
			if c.prefix == nil {
				bare = r.median
				base = bare
			}
			r.ratio = float64(r.median) / float64(base)
			results = append(results, r)
		}
		var cells []string
		var rss, lost string
		verdict := ""
		for _, r := range results {
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
			if r.config == "writewatch --audit" {
				rss, lost = fmt.Sprintf("%.1f MiB", r.rssMiB), fmt.Sprintf("%d", r.lost)
				if w.check != nil {
					verdict = w.check(r)
				}
				if strings.HasPrefix(w.name, "start-up") && r.median-bare > 150*time.Millisecond {
					verdict = fmt.Sprintf("+%s", fmtDur(r.median-bare))
				}
				if r.rssMiB > 64 {
					verdict += fmt.Sprintf(" RSS %.0f MiB > 64", r.rssMiB)
				}
			}
		}
		target := w.target
		if verdict != "" {
			target += " **missed: " + strings.TrimSpace(verdict) + "**"
			failed = true
		} else if w.check != nil || strings.HasPrefix(w.name, "start-up") {
			target += " met"
		}
		name := strings.ReplaceAll(w.name, "|", `\|`) // Markdown cells
		fmt.Fprintf(out, "| %s | %s | %s | %s | %s |\n", name, strings.Join(cells, " | "), target, rss, lost)
	}
	fmt.Fprintf(out, "\nempty hooks (floor): empty programs on the same syscall tracepoints, the kernel's own cost of watching syscalls.\n")
	fmt.Fprintf(out, "strace stops on every syscall: on micro workloads it is timed at N/100, against bare at N/100.\n")
	fmt.Fprintf(out, "Took %s. Reproduce with `make bench`.\n", time.Since(start).Round(time.Second))
	if failed {
		fmt.Fprintln(out, "Some targets were missed (see the table).")
	}
	return nil
}

func ratioAtMost(limit float64) func(result) string {
	return func(r result) string {
		if r.ratio > limit {
			return fmt.Sprintf("%.2f×", r.ratio)
		}
		return ""
	}
}

// measure runs w under c once to warm up, then runs times, and returns
// the median wall time with writewatch's own figures from its report.
func measure(w workload, c config, runs int) (result, error) {
	res := result{config: c.name}
	var times []time.Duration
	for i := 0; i <= runs; i++ {
		if w.prepare != nil {
			if err := w.prepare(); err != nil {
				return res, err
			}
		}
		jsonPath := filepath.Join(os.TempDir(), fmt.Sprintf("writewatch-bench-%d.json", os.Getpid()))
		argv := w.argv
		if c.prefix != nil {
			argv = append(c.prefix(jsonPath), w.argv...)
		}
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir = w.dir
		cmd.Stdout = io.Discard
		var stderr strings.Builder
		cmd.Stderr = &stderr
		t0 := time.Now()
		err := cmd.Run()
		d := time.Since(t0)
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			return res, err
		}
		if err != nil && !w.violates {
			return res, fmt.Errorf("exit %v: %s", err, stderr.String())
		}
		if c.prefix != nil && strings.Contains(c.name, "writewatch") {
			var rep struct {
				LostEvents uint64 `json:"lost_events"`
				PeakRSS    uint64 `json:"peak_rss_bytes"`
			}
			if data, err := os.ReadFile(jsonPath); err == nil && json.Unmarshal(data, &rep) == nil {
				res.lost = max(res.lost, rep.LostEvents)
				res.rssMiB = max(res.rssMiB, float64(rep.PeakRSS)/(1<<20))
			}
			os.Remove(jsonPath)
		}
		if i > 0 {
			times = append(times, d)
		}
	}
	slices.Sort(times)
	res.median = times[len(times)/2]
	return res, nil
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
