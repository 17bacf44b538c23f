package policy

import (
	"github.com/writewatch/writewatch/internal/launch"
	"github.com/writewatch/writewatch/tracer"
)

// killTier: the BPF programs kill the writer at the syscall's entry. The
// call itself still runs: the first offending write may take effect.
// Available wherever writewatch traces.
type killTier struct{}

func init() { register(10, killTier{}) }

func (killTier) String() string { return "kill" }

func (killTier) Probe(*Support) (string, error) { return "", nil }

func (killTier) Kernel(*tracer.EnforceOptions) {}

func (killTier) Launch(*Enforcement) *launch.Landlock { return nil }

func (killTier) Explain() string {
	return "a write the kernel cannot prove allowed kills its process at the syscall's entry; the call itself still runs, so the first offending write may take effect"
}

func (killTier) Refuses() bool { return false }

func (killTier) Note() string {
	return "the kill tier kills the writer at the syscall's entry, but the call itself still runs: " +
		"the first offending write of each process may take effect (an O_TRUNC open still empties the file)"
}

// LostRefusals counts kills.
func (killTier) LostRefusals(st tracer.Stats, seen Refusals) uint64 {
	return lost(st.Killed, seen.Killed)
}
