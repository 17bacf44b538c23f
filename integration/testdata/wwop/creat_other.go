//go:build !amd64

package main

import "errors"

// creat: newer architectures (arm64) have no creat syscall, only openat.
func creat([]string) error {
	return errors.New("creat: this architecture has no creat syscall")
}
