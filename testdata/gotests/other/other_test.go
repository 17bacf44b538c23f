package other

import (
	"os"
	"os/exec"
	"testing"
)

func TestOtherWrites(t *testing.T) {
	if err := os.WriteFile("other.txt", []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// go run from a test: the program it runs writes; the build does not count.
func TestGoRunWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	cmd := exec.Command("go", "run", "../writer", "gorun.txt")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
}
