// Command genheader writes bpf/ops.h, the kernel side's view of the table
// of operations (package ops), to the file named by its argument.
package main

import (
	"fmt"
	"os"

	"github.com/writewatch/writewatch/internal/ops"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: genheader FILE")
		os.Exit(2)
	}
	if err := os.WriteFile(os.Args[1], ops.CHeader(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "genheader:", err)
		os.Exit(1)
	}
}
