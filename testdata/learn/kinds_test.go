package learn

import (
	"fmt"
	"testing"
)

// An example, a benchmark and a fuzz target, each writing a file into
// the project.
func ExampleSave() {
	if err := Save("example-out.txt", "x"); err != nil {
		panic(err)
	}
	fmt.Println("saved")
	// Output: saved
}

func BenchmarkSave(b *testing.B) {
	for range b.N {
		if err := Save("bench-out.txt", "x"); err != nil {
			b.Fatal(err)
		}
	}
}

func FuzzSave(f *testing.F) {
	if err := Save("fuzz-setup.txt", "x"); err != nil {
		f.Fatal(err)
	}
	f.Add("seed")
	f.Fuzz(func(t *testing.T, s string) {
		if err := Save("fuzz-input.txt", s); err != nil {
			t.Fatal(err)
		}
	})
}
