package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/writewatch/writewatch/internal/policy"
	"github.com/writewatch/writewatch/internal/tracer"
)

// doctor prints what this machine supports, for --doctor.
func doctor(w io.Writer) int {
	s := policy.Probe()
	yes := func(ok bool, detail string) string {
		if ok {
			return "yes" + detail
		}
		return "no" + detail
	}
	lsms := strings.Join(s.LSMs, ",")
	if s.LSMErr != nil {
		lsms = "unknown: " + s.LSMErr.Error()
	}
	bpfLSM := "yes: BPF LSM programs load"
	if s.BPFLSMErr != nil {
		bpfLSM = "no: " + s.BPFLSMErr.Error()
	}
	landlock := fmt.Sprintf("ABI %d", s.LandlockABI)
	switch {
	case s.LandlockErr != nil:
		landlock = "no: " + s.LandlockErr.Error()
	case s.LandlockABI < policy.MinLandlockABI:
		landlock += fmt.Sprintf(" (too old to enforce: ABI %d restricts truncate)", policy.MinLandlockABI)
	}
	tracefs := "not mounted (not needed: writewatch uses raw tracepoints)"
	if s.Tracefs != "" {
		tracefs = "mounted at " + s.Tracefs + " (not needed: writewatch uses raw tracepoints)"
	}
	tracing := "yes: the tracing programs load and attach"
	if t, err := tracer.New(tracer.Options{RingBufferBytes: 1 << 20}); err != nil {
		tracing = "no: " + err.Error()
	} else {
		t.Close()
	}
	guard := "yes: chmod, chown, utimes and xattr changes outside the allowlist are refused (seccomp user notification)"
	if s.MetadataGuardErr != nil {
		guard = "no: their writer is killed, but the change may land: " + s.MetadataGuardErr.Error()
	}
	tier, why, _ := s.Choose(nil)
	rows := [][2]string{
		{"kernel", s.Kernel},
		{"BTF", yes(s.BTF, " (/sys/kernel/btf/vmlinux)")},
		{"tracefs", tracefs},
		{"tracing", tracing},
		{"active LSMs", lsms},
		{"BPF LSM", bpfLSM},
		{"Landlock", landlock},
		{"--enforce", fmt.Sprintf("%s (%s)", tier, why)},
		{"metadata", guard},
	}
	if !tier.Refuses() {
		rows = append(rows, [2]string{"", "the " + tier.String() + " tier cannot stop the first offending call of a process, only kill it"})
	}
	for _, r := range rows {
		fmt.Fprintf(w, "%-12s %s\n", r[0]+":", r[1])
	}
	return 0
}
