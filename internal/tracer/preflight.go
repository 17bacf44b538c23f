package tracer

import (
	"fmt"
	"os"
)

// Preflight checks what the programs need before loading them: kernel
// BTF, for CO-RE. (Raw tracepoints need no tracefs, and nothing is
// pinned, so no bpffs either.)
func Preflight() error {
	if _, err := os.Stat("/sys/kernel/btf/vmlinux"); err != nil {
		return fmt.Errorf("%w: no kernel BTF at /sys/kernel/btf/vmlinux (a kernel built with CONFIG_DEBUG_INFO_BTF=y, 5.17 or newer, is needed)", ErrUnsupported)
	}
	return nil
}
