// Package learn is a test suite with the habits writewatch's reports
// are about: numbered files in the project, a config under $HOME, a
// directory of outputs, files created and removed again, a failed
// removal, and an Example, a Benchmark and a Fuzz target that write.
package learn

import "os"

// Save writes data to path.
func Save(path, data string) error { return os.WriteFile(path, []byte(data), 0o644) }
