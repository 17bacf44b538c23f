package tracer

import (
	"errors"
	"runtime"
	"strings"
	"testing"
)

func TestCheckArch(t *testing.T) {
	for _, tc := range []struct {
		goarch, machine string
		ok              bool
		says            string
	}{
		{"amd64", "x86_64", true, ""},
		{"arm64", "aarch64", true, ""},
		{"amd64", "aarch64", false, "use the linux/arm64 build"},
		{"arm64", "x86_64", false, "use the linux/amd64 build"},
		{"riscv64", "riscv64", false, "supports x86-64 and arm64, not riscv64"},
	} {
		err := checkArch(tc.goarch, tc.machine)
		if (err == nil) != tc.ok {
			t.Errorf("%s on %s: %v", tc.goarch, tc.machine, err)
			continue
		}
		if err != nil && (!errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), tc.says)) {
			t.Errorf("%s on %s: %q: want ErrUnsupported saying %q", tc.goarch, tc.machine, err, tc.says)
		}
	}
	if err := Preflight(); err != nil && strings.Contains(err.Error(), runtime.GOARCH) {
		t.Errorf("this machine: %v", err)
	}
}

func TestCheckRelease(t *testing.T) {
	for release, ok := range map[string]bool{
		"6.18.0-1-cloud-amd64": true,
		"6.1.0-57-cloud-amd64": true,
		"6.12.117":             true,
		"7.0":                  true,
		"6.0.19":               false,
		"5.19.0-50-generic":    false,
		"5.17.3":               false,
		"4.19.0":               false,
		"unknown":              true, // unread: the load says what is missing
	} {
		err := checkRelease(release)
		if (err == nil) != ok {
			t.Errorf("checkRelease(%q) = %v, want ok %v", release, err, ok)
		}
		if err != nil && !errors.Is(err, ErrUnsupported) {
			t.Errorf("checkRelease(%q) = %v, not ErrUnsupported", release, err)
		}
	}
}
