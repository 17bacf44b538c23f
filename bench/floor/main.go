// Command floor runs a command with empty programs attached where an
// observation path of writewatch hooks the kernel: the kernel's own cost
// of the hooks alone, the floor under writewatch's numbers in `make
// bench` and `make vmbench`.
//
//	floor [-hooks tracepoints|dispatch|vfs] COMMAND [ARGS...]
//
// tracepoints (the default) are the syscall tracepoints writewatch uses:
// attaching anything there sends every syscall of every process through
// the kernel's syscall-tracing path. The other two need fentry and fexit
// (not on every kernel): dispatch hooks the one function every syscall
// is dispatched through, at its entry and its exit; vfs hooks the
// functions of the filesystem operations themselves (the open of a file,
// the security checks of each change to a directory or to metadata).
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"

	"github.com/writewatch/writewatch/report"
)

//go:generate go tool bpf2go -target amd64,arm64 floor ../../bpf/floor.bpf.c -- -I../../bpf/include

// dispatch is the function every syscall goes through, per architecture.
var dispatch = map[string]string{"amd64": "x64_sys_call", "arm64": "do_el0_svc"}

// vfsEntries are the security checks of the changes writewatch reports
// but opens, hooked at their entry; opens are hooked at the exit of
// vfs_open. A function the kernel does not have is left out.
var vfsEntries = []string{
	"security_path_unlink", "security_path_rmdir", "security_path_mkdir", "security_path_mknod",
	"security_path_symlink", "security_path_link", "security_path_rename", "security_path_truncate",
	"security_file_truncate", "security_path_chmod", "security_path_chown", "security_inode_setattr",
	"security_inode_setxattr", "security_inode_removexattr", "security_mmap_file",
}

func main() {
	code, err := run(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
	}
	os.Exit(code)
}

func run(args []string) (int, error) {
	fs := flag.NewFlagSet("floor", flag.ContinueOnError)
	hooks := fs.String("hooks", "tracepoints", "where to attach: tracepoints, dispatch or vfs")
	if err := fs.Parse(args); err != nil {
		return 2, err
	}
	if fs.NArg() == 0 {
		return 2, errors.New("usage: floor [-hooks tracepoints|dispatch|vfs] COMMAND [ARGS...]")
	}
	closeAll, err := attach(*hooks)
	defer closeAll()
	if err != nil {
		return 1, err
	}
	cmd := exec.Command(fs.Arg(0), fs.Args()[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err = cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), nil
	}
	if err != nil {
		return 1, err
	}
	return 0, nil
}

// attach loads and attaches the empty programs of hooks; the function it
// returns detaches and closes what it attached. With FLOOR_STATS set to a
// file's path, that function first writes there, as JSON, the kernel's
// count of each program's runs and their time (make bench's table of the
// programs' time, while the kernel counts them).
func attach(hooks string) (func(), error) {
	var closers []func() error
	var progs []*ebpf.Program
	closeAll := func() {
		if path := os.Getenv("FLOOR_STATS"); path != "" {
			writeStats(path, progs)
		}
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	spec, err := loadFloor()
	if err != nil {
		return closeAll, err
	}
	// hook loads the program name of spec attached to fn (empty: its
	// section's) and attaches it.
	hook := func(name, fn string) error {
		ps := spec.Programs[name].Copy()
		if fn != "" {
			ps.AttachTo = fn
		}
		p, err := ebpf.NewProgram(ps)
		if err != nil {
			return fmt.Errorf("load %s on %s: %w", name, ps.AttachTo, err)
		}
		closers, progs = append(closers, p.Close), append(progs, p)
		l, err := link.AttachTracing(link.TracingOptions{Program: p})
		if err != nil {
			return fmt.Errorf("attach %s to %s: %w", name, ps.AttachTo, err)
		}
		closers = append(closers, l.Close)
		return nil
	}
	switch hooks {
	case "tracepoints":
		return closeAll, errors.Join(hook(floorProgFloorEnter, ""), hook(floorProgFloorExit, ""))
	case "dispatch":
		fn, ok := dispatch[runtime.GOARCH]
		if !ok {
			return closeAll, fmt.Errorf("no syscall dispatch function known for %s", runtime.GOARCH)
		}
		return closeAll, errors.Join(hook(floorProgFloorFentry, fn), hook(floorProgFloorFexit, fn))
	case "vfs":
		if err := hook(floorProgFloorFexit, "vfs_open"); err != nil {
			return closeAll, err
		}
		for _, fn := range vfsEntries {
			if err := hook(floorProgFloorFentry, fn); err != nil && !errors.Is(err, btf.ErrNotFound) {
				return closeAll, err
			}
		}
		return closeAll, nil
	}
	return closeAll, fmt.Errorf("-hooks %q: want tracepoints, dispatch or vfs", hooks)
}

// writeStats writes the kernel's counts for progs to path, summed by
// name (vfs hooks one program to many functions).
func writeStats(path string, progs []*ebpf.Program) {
	byName := map[string]*report.ProgramStat{}
	var out []*report.ProgramStat
	for _, p := range progs {
		info, err := p.Info()
		st, serr := p.Stats()
		if err != nil || serr != nil {
			continue
		}
		ps := byName[info.Name]
		if ps == nil {
			ps = &report.ProgramStat{Name: info.Name}
			byName[info.Name] = ps
			out = append(out, ps)
		}
		ps.Runs += st.RunCount
		ps.RunNS += uint64(st.Runtime)
	}
	data, err := json.Marshal(map[string]any{"programs": out})
	if err == nil {
		err = os.WriteFile(path, data, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor: stats:", err)
	}
}
