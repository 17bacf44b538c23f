package session

import (
	"testing"

	"github.com/writewatch/writewatch/internal/live"
	"github.com/writewatch/writewatch/tracer"
)

// The kernel's causes of loss land where live.LostCauses names them.
func TestKernelCounters(t *testing.T) {
	st := tracer.Stats{RingbufFull: 4, ProcMapFull: 11, Truncated: 2, AllowedInKernel: 20, Repeats: 3}
	k := KernelCounters(st)
	byCause := st.LostByCause()
	for i, c := range live.LostCauses {
		if k.Lost[i] != byCause[c] {
			t.Errorf("lost %s = %d, want %d", c, k.Lost[i], byCause[c])
		}
	}
	if k.Truncated != 2 || k.Settled != 23 {
		t.Errorf("%+v", k)
	}
}
