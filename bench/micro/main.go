// Command micro is the micro workload of `make bench`: N small file
// operations of one kind, as fast as it can.
//
//	micro write DIR N       N open+write+close of one file in DIR (rewritten
//	                        in place: no O_TRUNC, which makes ext4 flush)
//	micro write-many DIR N  the same, N different files in DIR
//	micro read FILE N       N read-only open+close of FILE
//
// With MICRO_ELAPSED set to a file's path, it writes there how long the N
// operations took, in nanoseconds: the loop alone, without the start-up
// of whatever runs it (make vmbench, where a tool's start-up takes
// seconds).
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: micro write|write-many|read PATH N")
		os.Exit(2)
	}
	n, err := strconv.Atoi(os.Args[3])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	start := time.Now()
	if err := run(os.Args[1], os.Args[2], n); err != nil {
		fmt.Fprintln(os.Stderr, "micro:", err)
		os.Exit(1)
	}
	if path := os.Getenv("MICRO_ELAPSED"); path != "" {
		if err := os.WriteFile(path, []byte(strconv.FormatInt(int64(time.Since(start)), 10)), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "micro:", err)
			os.Exit(1)
		}
	}
}

func run(mode, path string, n int) error {
	data := []byte("writewatch micro benchmark\n")
	switch mode {
	case "write", "write-many":
		name := filepath.Join(path, "micro.txt")
		for i := range n {
			if mode == "write-many" {
				name = filepath.Join(path, "micro-"+strconv.Itoa(i)+".txt")
			}
			fd, err := unix.Open(name, unix.O_WRONLY|unix.O_CREAT|unix.O_CLOEXEC, 0o644)
			if err != nil {
				return err
			}
			unix.Write(fd, data)
			unix.Close(fd)
		}
	case "read":
		for range n {
			fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				return err
			}
			unix.Close(fd)
		}
	default:
		return fmt.Errorf("unknown mode %q", mode)
	}
	return nil
}
