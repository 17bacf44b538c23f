package launch

import (
	"context"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"strings"
	"time"
)

// Account is a user's entry in the password database, with the groups
// the user is in.
type Account struct {
	Name, Home, Shell string
	Groups            []uint32
}

// accountTimeout bounds each of getent and id.
const accountTimeout = 2 * time.Second

// LookupAccount reads uid's account. os/user asks NSS in a cgo build,
// but reads only /etc/passwd and /etc/group in a static one (the release
// binaries): a user known only to NSS (LDAP, SSSD) is then read through
// getent(1) and id(1), which ask NSS in every build. ok is false when
// no source knows uid.
func LookupAccount(uid uint32) (a Account, ok bool) {
	want := strconv.FormatUint(uint64(uid), 10)
	entry := passwdEntry(want)
	if entry != nil {
		a.Shell = strings.TrimSpace(entry[6])
	}
	if u, err := user.LookupId(want); err == nil {
		a.Name, a.Home = u.Username, u.HomeDir
		if gids, err := u.GroupIds(); err == nil {
			a.Groups = parseIDs(gids)
		}
		return a, true
	}
	if entry == nil {
		return a, false
	}
	a.Name, a.Home = entry[0], entry[5]
	ctx, cancel := context.WithTimeout(context.Background(), accountTimeout)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "id", "-G", a.Name).Output(); err == nil {
		a.Groups = parseIDs(strings.Fields(string(out)))
	}
	return a, true
}

// passwdEntry is the passwd(5) entry of uid, split into its seven
// fields, from /etc/passwd, else from getent for users from other NSS
// sources; nil when neither has it.
func passwdEntry(uid string) []string {
	if data, err := os.ReadFile("/etc/passwd"); err == nil {
		if f := findPasswd(data, uid); f != nil {
			return f
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), accountTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, "getent", "passwd", uid).Output()
	if err != nil {
		return nil
	}
	return findPasswd(out, uid)
}

// findPasswd finds the entry of uid in passwd(5) lines.
func findPasswd(data []byte, uid string) []string {
	for line := range strings.SplitSeq(string(data), "\n") {
		f := strings.Split(line, ":")
		if len(f) == 7 && f[2] == uid {
			return f
		}
	}
	return nil
}

// parseIDs parses decimal user or group IDs, skipping what is not one.
func parseIDs(ids []string) []uint32 {
	var out []uint32
	for _, s := range ids {
		if n, err := strconv.ParseUint(s, 10, 32); err == nil {
			out = append(out, uint32(n))
		}
	}
	return out
}
