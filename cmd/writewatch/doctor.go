package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"github.com/writewatch/writewatch/internal/launch"
	"github.com/writewatch/writewatch/internal/policy"
	"github.com/writewatch/writewatch/internal/sandbox"
	"github.com/writewatch/writewatch/internal/witness"
	"github.com/writewatch/writewatch/tracer"
)

// doctorFacts is what --doctor found out.
type doctorFacts struct {
	priv     launch.Privileges
	traceErr error    // from loading and attaching the tracing programs
	unseen   []string // what those programs could not watch here (tracer.Stats.Unwatched)
	// witnessErr is why the filesystem witness could not watch the
	// working directory's filesystem; nil when it could.
	witnessErr error
	// sandboxErr is why --sandbox cannot be made here; nil when it can.
	sandboxErr error
	support    policy.Support
}

// doctor prints, for --doctor, whether this user can trace here and what
// to do if not, then what this machine supports. It returns exitCannot
// when this user cannot trace.
func doctor(w io.Writer) int {
	f := doctorFacts{priv: launch.CurrentPrivileges(), support: policy.Probe()}
	if t, err := tracer.New(tracer.Options{RingBufferBytes: 1 << 20}); err != nil {
		f.traceErr = err
	} else {
		t.WaitURing() // it loads in the background
		if st, err := t.Stats(); err == nil {
			f.unseen = st.Unwatched
		}
		t.Close()
	}
	f.witnessErr = probeWitness()
	f.sandboxErr = sandbox.Probe(os.TempDir())
	return writeDoctor(w, f)
}

// probeWitness starts a filesystem witness on the working directory's
// filesystem, as a run does, and stops it.
func probeWitness() error {
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	wit, err := witness.New(witness.Options{Paths: []string{wd}, Handle: func(witness.Event) {}, LimitedQueue: true, ContentsLater: true})
	if err != nil {
		return err
	}
	return wit.Close()
}

// sandboxRow says whether --sandbox works here.
func sandboxRow(err error) string {
	if err == nil {
		return "yes: --sandbox keeps what COMMAND writes outside the allowlist in overlays"
	}
	why := strings.TrimPrefix(strings.TrimPrefix(err.Error(), sandbox.ErrUnavailable.Error()), ": ")
	return "no: " + why
}

// witnessRow says whether runs here get the filesystem witness, a second
// account of what changed on disk.
func witnessRow(err error) string {
	switch {
	case err == nil:
		return "on: fanotify gives a second account of what changed on disk"
	case errors.Is(err, witness.ErrNeedsRoot):
		return "off: watching whole filesystems needs CAP_SYS_ADMIN, which a setcap copy lacks: runs are judged from their system calls alone, and their reports say so (with sudo it is on)"
	}
	return "off: " + strings.TrimPrefix(err.Error(), "witness: ") + "; runs are judged from their system calls only"
}

// memlockHint is the advice cilium/ebpf adds to a refused map: it is
// about kernels before 5.11, which writewatch does not run on, and the
// refusal is about privileges.
var memlockHint = regexp.MustCompile(` ?\(MEMLOCK may be too low, consider rlimit\.RemoveMemlock\)`)

// traceRows answer first: can this user trace here, and if not, what to
// do.
func traceRows(f doctorFacts) [][2]string {
	why, todo := f.priv.Problem()
	switch {
	case f.traceErr == nil && f.priv.Root:
		return [][2]string{{"can trace", "yes, as root"}}
	case f.traceErr == nil:
		return [][2]string{{"can trace", fmt.Sprintf("yes, as uid %d with CAP_BPF and CAP_PERFMON", f.priv.UID)}}
	case why != "" && errors.Is(f.traceErr, tracer.ErrPermission):
		return [][2]string{{"can trace", "no: " + why}, {"what to do", todo}}
	case errors.Is(f.traceErr, tracer.ErrPermission):
		// The privileges are there; the kernel refused for another reason.
		return [][2]string{{"can trace", "no: " + memlockHint.ReplaceAllString(f.traceErr.Error(), "")},
			{"what to do", "the kernel refuses BPF programs even with these privileges (lockdown, an LSM policy or a seccomp filter?); try as root"}}
	case errors.Is(f.traceErr, tracer.ErrUnsupported):
		return [][2]string{{"can trace", "no: " + f.traceErr.Error()},
			{"what to do", "writewatch needs " + tracer.MinKernel + " or newer with BTF (CONFIG_DEBUG_INFO_BTF=y), on x86-64 or arm64"}}
	}
	return [][2]string{{"can trace", "no: " + memlockHint.ReplaceAllString(f.traceErr.Error(), "")}}
}

func writeDoctor(w io.Writer, f doctorFacts) int {
	s := f.support
	var rows [][2]string
	row := func(k, v string) { rows = append(rows, [2]string{k, v}) }

	// First the answer: can this user trace here, and if not, what to do.
	canTrace := f.traceErr == nil
	for _, r := range traceRows(f) {
		row(r[0], r[1])
	}

	for _, u := range f.unseen {
		row("not seen", u+": every run is incomplete")
	}
	if canTrace {
		row("witness", witnessRow(f.witnessErr))
		row("sandbox", sandboxRow(f.sandboxErr))
	}
	row("kernel", s.Kernel)
	btf := "no"
	if s.BTF {
		btf = "yes (/sys/kernel/btf/vmlinux)"
	}
	row("BTF", btf)
	tracefs := "not mounted (not needed: writewatch uses raw tracepoints)"
	if s.Tracefs != "" {
		tracefs = "mounted at " + s.Tracefs + " (not needed: writewatch uses raw tracepoints)"
	}
	row("tracefs", tracefs)
	lsms := strings.Join(s.LSMs, ",")
	if s.LSMErr != nil {
		lsms = "unknown: " + s.LSMErr.Error()
	}
	row("active LSMs", lsms)
	bpfLSM := "yes: BPF LSM programs load"
	if s.BPFLSMErr != nil {
		bpfLSM = "no: " + s.BPFLSMErr.Error()
	}
	row("BPF LSM", bpfLSM)
	landlock := fmt.Sprintf("ABI %d", s.LandlockABI)
	switch {
	case s.LandlockErr != nil:
		landlock = "no: " + s.LandlockErr.Error()
	case s.LandlockABI < policy.MinLandlockABI:
		landlock += fmt.Sprintf(" (too old to enforce: ABI %d restricts truncate)", policy.MinLandlockABI)
	}
	row("Landlock", landlock)

	if !canTrace {
		// Every tier needs the tracing programs.
		row("--enforce", "unavailable: this user cannot trace here (see above)")
		printRows(w, rows)
		return exitCannot
	}
	tier, tierWhy, tierErr := s.Choose(nil)
	if tierErr != nil {
		row("--enforce", "unavailable: "+tierErr.Error())
	} else {
		row("--enforce", fmt.Sprintf("%s (%s)", tier, tierWhy))
	}
	guard := "yes: chmod, chown, utimes, xattr and inode flag changes outside the allowlist are refused (seccomp user notification)"
	if s.MetadataGuardErr != nil {
		guard = "no: their writer is killed, but the change may land: " + s.MetadataGuardErr.Error()
	}
	row("metadata", guard)
	if tier != nil && !tier.Refuses() {
		row("", "the "+tier.String()+" tier cannot stop the first offending call of a process, only kill it")
	}
	printRows(w, rows)
	return 0
}

func printRows(w io.Writer, rows [][2]string) {
	for _, r := range rows {
		k := r[0]
		if k != "" {
			k += ":"
		}
		fmt.Fprintf(w, "%-12s %s\n", k, r[1])
	}
}
