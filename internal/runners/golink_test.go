package runners

import "testing"

func TestLinkedTestBinary(t *testing.T) {
	const link = "/usr/local/go/pkg/tool/linux_amd64/link"
	for _, c := range []struct {
		exe  string
		args []string
		want string
	}{
		{link, []string{link, "-o", "/tmp/go-build1/b001/pkg.test", "-importcfg", "x", "-s", "-w"}, "/tmp/go-build1/b001/pkg.test"},
		{link, []string{link, "-o=/tmp/go-build1/b001/pkg.test"}, "/tmp/go-build1/b001/pkg.test"},
		{link, []string{link, "-o", "/tmp/go-build1/b001/exe/a.out"}, ""}, // go build, go run
		{link, []string{link, "-o", "pkg.test"}, ""},                      // not where go test puts it
		{link, []string{link, "-V=full"}, ""},
		{link, []string{link, "-o"}, ""},
		{"/usr/bin/ld", []string{"ld", "-o", "/tmp/x.test"}, ""},
	} {
		if got := linkedTestBinary(c.exe, c.args); got != c.want {
			t.Errorf("linkedTestBinary(%q, %q) = %q, want %q", c.exe, c.args, got, c.want)
		}
	}
}
