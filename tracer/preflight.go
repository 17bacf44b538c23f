package tracer

import (
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// Preflight checks what the programs need before loading them: a kernel
// of the architecture writewatch was built for, recent enough, and kernel
// BTF, for CO-RE. (Raw tracepoints need no tracefs, and nothing is
// pinned, so no bpffs either.)
func Preflight() error {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return fmt.Errorf("uname: %w", err)
	}
	if err := checkArch(runtime.GOARCH, unix.ByteSliceToString(u.Machine[:])); err != nil {
		return err
	}
	if err := checkRelease(unix.ByteSliceToString(u.Release[:])); err != nil {
		return err
	}
	if _, err := os.Stat("/sys/kernel/btf/vmlinux"); err != nil {
		return fmt.Errorf("%w: no kernel BTF at /sys/kernel/btf/vmlinux (a kernel built with CONFIG_DEBUG_INFO_BTF=y, %s or newer, is needed)", ErrUnsupported, MinKernel)
	}
	return nil
}

// MinKernel names the oldest kernel writewatch loads on: the io_uring
// programs read the request's layout of Linux 6.0 and newer (io_kiocb's
// cmd), and 6.1 is the oldest the tests run on (make vmtest).
const MinKernel = "Linux 6.1"

const minMajor, minMinor = 6, 1

// checkRelease fails for a kernel release (uname -r) older than
// MinKernel. A release it cannot read passes: the load then says what
// is missing.
func checkRelease(release string) error {
	var major, minor int
	if n, _ := fmt.Sscanf(release, "%d.%d", &major, &minor); n < 2 {
		return nil
	}
	if major < minMajor || major == minMajor && minor < minMinor {
		return fmt.Errorf("%w: this kernel is %s; writewatch needs %s or newer", ErrUnsupported, release, MinKernel)
	}
	return nil
}

// machines are the kernels' names (uname -m) of the architectures
// writewatch supports, by GOARCH.
var machines = map[string]string{"amd64": "x86_64", "arm64": "aarch64"}

// checkArch fails unless a writewatch built for goarch can trace on a
// kernel whose uname -m is machine: the BPF programs read syscall numbers
// and registers as that architecture has them, so a binary run under
// emulation (an x86-64 writewatch on an arm64 kernel, say) would misread
// every syscall.
func checkArch(goarch, machine string) error {
	want, ok := machines[goarch]
	if !ok {
		return fmt.Errorf("%w: writewatch supports x86-64 and arm64, not %s", ErrUnsupported, goarch)
	}
	if machine != want {
		return fmt.Errorf("%w: this writewatch is built for %s (linux/%s), the kernel is %s: use the linux/%s build on this machine", ErrUnsupported, want, goarch, machine, goarchOf(machine))
	}
	return nil
}

// goarchOf is the GOARCH of a kernel machine name, or the name itself.
func goarchOf(machine string) string {
	for goarch, m := range machines {
		if m == machine {
			return goarch
		}
	}
	return machine
}
