package policy

import (
	"errors"
	"strings"
	"testing"
)

// When the active LSMs cannot be read (securityfs, without root), a BPF
// LSM program that does not load says why; one that loads leaves the
// answer unknown.
func TestCheckBPFLSM(t *testing.T) {
	eperm := errors.New("the kernel refuses to load BPF LSM programs (EPERM)")
	noSecurityfs := errors.New("securityfs is not mounted and cannot be (unshare: operation not permitted)")
	refused := func() error { return eperm }
	loads := func() error { return nil }
	for _, tc := range []struct {
		name   string
		lsms   []string
		lsmErr error
		load   func() error
		want   string // "" for nil
	}{
		{"LSMs unknown, refused", nil, noSecurityfs, refused, eperm.Error()},
		{"LSMs unknown, loads", nil, noSecurityfs, loads, "active LSMs unknown: securityfs is not mounted"},
		{"bpf not active", []string{"capability", "landlock"}, nil, loads, "bpf is not an active LSM"},
		{"bpf active, refused", []string{"landlock", "bpf"}, nil, refused, eperm.Error()},
		{"bpf active, loads", []string{"landlock", "bpf"}, nil, loads, ""},
	} {
		err := checkBPFLSM(tc.lsms, tc.lsmErr, tc.load)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v, want nil", tc.name, err)
		case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)):
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}
