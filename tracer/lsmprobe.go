package tracer

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"
)

// ProbeLSM loads (and at once unloads) the smallest BPF LSM program, on
// file_open: nil means LSM programs can be loaded here. A kernel may list
// bpf among its active LSMs and still refuse them.
//
// It is loaded as a collection so that it reads the kernel's BTF (to find
// file_open) through the cache New uses: a run that probes, then loads,
// reads it once, and Warm may have read it already.
func ProbeLSM() error {
	coll, err := ebpf.NewCollectionWithOptions(&ebpf.CollectionSpec{Programs: map[string]*ebpf.ProgramSpec{"lsm_probe": {
		Type:       ebpf.LSM,
		AttachType: ebpf.AttachLSMMac,
		AttachTo:   "file_open",
		License:    "GPL",
		Instructions: asm.Instructions{
			asm.Mov.Imm(asm.R0, 0),
			asm.Return(),
		},
	}}}, ebpf.CollectionOptions{Cache: kernelBTF})
	if errors.Is(err, unix.EPERM) {
		// cilium/ebpf suggests MEMLOCK then; the tracing programs load,
		// so it is the LSM program that is refused.
		return errors.New("the kernel refuses to load BPF LSM programs (EPERM)")
	}
	if err != nil {
		return fmt.Errorf("the kernel refuses BPF LSM programs: %w", err)
	}
	coll.Close()
	return nil
}
