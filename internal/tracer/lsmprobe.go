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
func ProbeLSM() error {
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type:       ebpf.LSM,
		AttachType: ebpf.AttachLSMMac,
		AttachTo:   "file_open",
		License:    "GPL",
		Instructions: asm.Instructions{
			asm.Mov.Imm(asm.R0, 0),
			asm.Return(),
		},
	})
	if errors.Is(err, unix.EPERM) {
		// cilium/ebpf suggests MEMLOCK then; the tracing programs load,
		// so it is the LSM program that is refused.
		return errors.New("the kernel refuses to load BPF LSM programs (EPERM)")
	}
	if err != nil {
		return fmt.Errorf("the kernel refuses BPF LSM programs: %w", err)
	}
	return prog.Close()
}
