package ops

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The arm64 numbers are those of golang.org/x/sys/unix's
// zsysnum_linux_arm64.go, read from the module's source (this test runs
// on any architecture): every syscall the table names has there the
// number it has here, and one absent there is absent here.
func TestNumbersARM64(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-json", "golang.org/x/sys").Output()
	if err != nil {
		t.Fatalf("go list -m golang.org/x/sys: %v", err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		t.Fatalf("go list -m golang.org/x/sys: no module directory (%v); run go mod download", err)
	}
	f, err := os.Open(filepath.Join(mod.Dir, "unix", "zsysnum_linux_arm64.go"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := map[string]uint32{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// SYS_OPENAT                  = 56
		fields := strings.Fields(sc.Text())
		if len(fields) != 3 || fields[1] != "=" || !strings.HasPrefix(fields[0], "SYS_") {
			continue
		}
		nr, err := strconv.ParseUint(fields[2], 10, 32)
		if err != nil {
			t.Fatalf("%s: %v", sc.Text(), err)
		}
		want[strings.ToLower(strings.TrimPrefix(fields[0], "SYS_"))] = uint32(nr)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if want["openat"] != 56 {
		t.Fatalf("zsysnum_linux_arm64.go: openat is %d, not 56: the file was not read", want["openat"])
	}
	got := numbers["arm64"]
	for _, table := range numbers {
		for name := range table {
			w, there := want[name]
			g, here := got[name]
			switch {
			case there && !here:
				t.Errorf("%s: arm64 has it (%d); add it to the table", name, w)
			case !there && here:
				t.Errorf("%s: arm64 has no such syscall, the table says %d", name, g)
			case g != w:
				t.Errorf("%s: %d, golang.org/x/sys/unix says %d", name, g, w)
			}
		}
	}
}
