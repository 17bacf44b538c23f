package policy

import (
	"errors"
	"fmt"
	"slices"

	"github.com/writewatch/writewatch/internal/launch"
	"github.com/writewatch/writewatch/tracer"
)

// lsmTier: BPF LSM programs (bpf/enforce.bpf.c) refuse the write in the
// kernel, for the processes of the traced tree only.
type lsmTier struct{}

func init() { register(30, lsmTier{}) }

func (lsmTier) String() string { return "lsm" }

func (lsmTier) Probe(s *Support) (string, error) {
	if s.BPFLSMErr != nil {
		return "", errors.New("BPF LSM unavailable: " + s.BPFLSMErr.Error())
	}
	return "BPF LSM programs load here", nil
}

// probeBPFLSM says whether BPF LSM programs load here (nil), given the
// active LSMs. When those are unknown (securityfs cannot be mounted
// without root), a program that does not load is the answer, and the
// reason, all the same (EPERM, for a setcap copy).
func probeBPFLSM(lsms []string, lsmErr error) error {
	return checkBPFLSM(lsms, lsmErr, tracer.ProbeLSM)
}

func checkBPFLSM(lsms []string, lsmErr error, load func() error) error {
	switch {
	case lsmErr != nil:
		if err := load(); err != nil {
			return err
		}
		// It loads; whether it would run is unknown.
		return fmt.Errorf("active LSMs unknown: %w", lsmErr)
	case !slices.Contains(lsms, "bpf"):
		return errors.New("bpf is not an active LSM (boot with lsm=...,bpf)")
	}
	return load()
}

func (lsmTier) Kernel(o *tracer.EnforceOptions) { o.LSM = true }

func (lsmTier) Launch(*Enforcement) *launch.Landlock { return nil }

func (lsmTier) Explain() string {
	return "BPF LSM programs refuse writes outside the grants below (EPERM) for the traced tree, and kill the writer"
}

func (lsmTier) Refuses() bool { return true }

func (lsmTier) Note() string { return "" }

// LostRefusals counts refusals, less the LSM programs' refusals of
// syscalls writewatch does not record.
func (lsmTier) LostRefusals(st tracer.Stats, seen Refusals) uint64 {
	return lost(st.Blocked-min(st.Blocked, st.Unmarked), seen.Blocked)
}
