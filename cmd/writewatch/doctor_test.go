package main

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/writewatch/writewatch/internal/launch"
	"github.com/writewatch/writewatch/internal/policy"
	"github.com/writewatch/writewatch/internal/witness"
	"github.com/writewatch/writewatch/tracer"
)

// A user who cannot trace learns that first, with what to do, and
// nothing about enforcement tiers they could not use.
func TestDoctorUserWithoutPrivileges(t *testing.T) {
	// What cilium/ebpf answers when a map may not be created.
	refused := fmt.Errorf("load BPF programs: %w: map goprocs: map create: operation not permitted (MEMLOCK may be too low, consider rlimit.RemoveMemlock)", tracer.ErrPermission)
	f := doctorFacts{
		priv:     launch.Privileges{UID: 1000, Missing: []string{"cap_bpf", "cap_perfmon"}, Executable: "/usr/local/bin/writewatch"},
		traceErr: refused,
		support:  policy.Support{Kernel: "6.12.0", BTF: true, LandlockABI: 6, BPFLSMErr: errors.New("bpf is not an active LSM")},
	}
	var out bytes.Buffer
	if code := writeDoctor(&out, f); code != exitCannot {
		t.Errorf("exit code %d, want %d", code, exitCannot)
	}
	lines := strings.Split(out.String(), "\n")
	if !strings.HasPrefix(lines[0], "can trace:   no: loading BPF programs needs root, or CAP_BPF and CAP_PERFMON") {
		t.Errorf("first line %q", lines[0])
	}
	if !strings.HasPrefix(lines[1], "what to do:  run it with sudo, or once: sudo setcap cap_bpf,cap_perfmon+ep /usr/local/bin/writewatch") {
		t.Errorf("second line %q", lines[1])
	}
	if strings.Contains(out.String(), "RemoveMemlock") {
		t.Errorf("cilium's memlock hint shown:\n%s", out.String())
	}
	enforceRow := rowOf(out.String(), "--enforce:")
	if strings.Contains(enforceRow, "landlock") || !strings.Contains(enforceRow, "unavailable") {
		t.Errorf("--enforce row %q", enforceRow)
	}
}

// With the privileges but a kernel that still refuses, the answer is the
// kernel's error, not the setcap advice again.
func TestDoctorPrivilegedButRefused(t *testing.T) {
	f := doctorFacts{
		priv:     launch.Privileges{UID: 1000},
		traceErr: fmt.Errorf("load BPF programs: %w: operation not permitted (MEMLOCK may be too low, consider rlimit.RemoveMemlock)", tracer.ErrPermission),
	}
	var out bytes.Buffer
	if code := writeDoctor(&out, f); code != exitCannot {
		t.Errorf("exit code %d, want %d", code, exitCannot)
	}
	if strings.Contains(out.String(), "setcap") || strings.Contains(out.String(), "RemoveMemlock") {
		t.Errorf("output:\n%s", out.String())
	}
}

func TestDoctorCanTrace(t *testing.T) {
	f := doctorFacts{
		priv:    launch.Privileges{UID: 1000},
		support: policy.Support{Kernel: "6.12.0", BTF: true, LandlockABI: 6, BPFLSMErr: errors.New("bpf is not an active LSM")},
	}
	var out bytes.Buffer
	if code := writeDoctor(&out, f); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
	if first, _, _ := strings.Cut(out.String(), "\n"); first != "can trace:   yes, as uid 1000 with CAP_BPF and CAP_PERFMON" {
		t.Errorf("first line %q", first)
	}
	if row := rowOf(out.String(), "--enforce:"); !strings.Contains(row, "landlock") {
		t.Errorf("--enforce row %q", row)
	}
}

// What the programs could not watch on this kernel is said, with what
// it does to every run.
func TestDoctorSaysWhatIsNotSeen(t *testing.T) {
	f := doctorFacts{
		priv:    launch.Privileges{Root: true},
		unseen:  []string{"io_uring requests are not watched: the kernel has no tracepoint io_uring_submit_req to attach to"},
		support: policy.Support{Kernel: "6.12.0", BTF: true, LandlockABI: 6},
	}
	var out bytes.Buffer
	if code := writeDoctor(&out, f); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
	if row := rowOf(out.String(), "not seen:"); !strings.Contains(row, "io_uring requests are not watched") || !strings.Contains(row, "every run is incomplete") {
		t.Errorf("not seen row %q\n%s", row, out.String())
	}
}

func rowOf(out, key string) string {
	for line := range strings.SplitSeq(out, "\n") {
		if strings.HasPrefix(line, key) {
			return line
		}
	}
	return ""
}

// A setcap copy traces, but without CAP_SYS_ADMIN the filesystem
// witness is off: --doctor says so, and what it means for a run.
func TestDoctorSaysTheWitnessIsOff(t *testing.T) {
	f := doctorFacts{
		priv:       launch.Privileges{UID: 1000, FileCaps: true},
		witnessErr: fmt.Errorf("witness: fanotify_init: %w (operation not permitted)", witness.ErrNeedsRoot),
		support:    policy.Support{Kernel: "6.12.0", BTF: true, LandlockABI: 6},
	}
	var out bytes.Buffer
	if code := writeDoctor(&out, f); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
	row := rowOf(out.String(), "witness:")
	for _, want := range []string{"off", "CAP_SYS_ADMIN", "setcap", "system calls", "sudo"} {
		if !strings.Contains(row, want) {
			t.Errorf("witness row %q does not say %q", row, want)
		}
	}
	f.witnessErr = nil
	out.Reset()
	writeDoctor(&out, f)
	if row := rowOf(out.String(), "witness:"); !strings.HasPrefix(row, "witness:     on") {
		t.Errorf("witness row %q, want on", row)
	}
}
