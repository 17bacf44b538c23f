// Command floor runs a command with empty programs attached to the
// syscall tracepoints writewatch uses: the kernel's own cost of hooking
// every syscall, the floor under writewatch's numbers in `make bench`.
//
//	floor COMMAND [ARGS...]
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

//go:generate go tool bpf2go -target amd64,arm64 floor ../../bpf/floor.bpf.c -- -I../../bpf/include

func main() {
	code, err := run(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
	}
	os.Exit(code)
}

func run(args []string) (int, error) {
	if len(args) == 0 {
		return 2, errors.New("usage: floor COMMAND [ARGS...]")
	}
	var objs floorObjects
	if err := loadFloorObjects(&objs, nil); err != nil {
		return 1, fmt.Errorf("load: %w", err)
	}
	defer objs.Close()
	for _, p := range []*ebpf.Program{objs.FloorEnter, objs.FloorExit} {
		l, err := link.AttachTracing(link.TracingOptions{Program: p})
		if err != nil {
			return 1, fmt.Errorf("attach: %w", err)
		}
		defer l.Close()
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), nil
	}
	if err != nil {
		return 1, err
	}
	return 0, nil
}
