// Package gotests is a sample whose tests write where they should not, in
// every way writewatch must tell apart: a sequential test, one of two
// parallel tests, a subtest, a goroutine a test started, a child process
// a test ran, and TestMain. Each writes a file named after itself into
// the package directory; one test writes only under t.TempDir().
package gotests

import "os"

// Touch writes name.
func Touch(name string) error { return os.WriteFile(name, []byte("x\n"), 0o644) }
