package launch

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestFindPasswd(t *testing.T) {
	data := []byte("root:x:0:0:root:/root:/bin/bash\nbad line\ndev:x:1000:1000:Dev,,,:/home/dev:/usr/bin/zsh\n")
	if f := findPasswd(data, "1000"); f == nil || f[0] != "dev" || f[5] != "/home/dev" || f[6] != "/usr/bin/zsh" {
		t.Errorf("entry of 1000 = %q", f)
	}
	if f := findPasswd(data, "100"); f != nil {
		t.Errorf("entry of 100 = %q, want none", f)
	}
}

// A user in /etc/passwd: os/user's answer, the primary group among the
// groups.
func TestLookupAccount(t *testing.T) {
	a, ok := LookupAccount(0)
	if !ok || a.Name != "root" || a.Home != "/root" || a.Shell == "" || !slices.Contains(a.Groups, 0) {
		t.Errorf("LookupAccount(0) = %+v, %v", a, ok)
	}
	if a, ok := LookupAccount(4242421); ok {
		t.Errorf("an unknown uid: %+v", a)
	}
}

// A user that only NSS knows (LDAP, SSSD), as getent(1) and id(1) answer
// for it, which a static build's os/user does not ask: the account comes
// from them, home, shell and groups included.
func TestLookupAccountNSS(t *testing.T) {
	bin := t.TempDir()
	script := func(name, body string) {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script("getent", `[ "$1 $2" = "passwd 4242424" ] || exit 2
echo 'ldapdev:*:4242424:5000:LDAP Dev:/home/ldapdev:/usr/bin/fish'
`)
	script("id", `[ "$1 $2" = "-G ldapdev" ] || exit 1
echo 5000 27 4242
`)
	t.Setenv("PATH", bin)
	a, ok := LookupAccount(4242424)
	want := Account{Name: "ldapdev", Home: "/home/ldapdev", Shell: "/usr/bin/fish", Groups: []uint32{5000, 27, 4242}}
	if !ok || a.Name != want.Name || a.Home != want.Home || a.Shell != want.Shell || !slices.Equal(a.Groups, want.Groups) {
		t.Errorf("LookupAccount(4242424) = %+v, %v; want %+v", a, ok, want)
	}
}
