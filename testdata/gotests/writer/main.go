// Command writer writes the file named by its argument.
package main

import "os"

func main() {
	if err := os.WriteFile(os.Args[1], []byte("x\n"), 0o644); err != nil {
		panic(err)
	}
}
