package mountinfo

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestParse(t *testing.T) {
	data := strings.Join([]string{
		`26 1 254:0 / / rw,relatime - ext4 /dev/vda rw`,
		`40 26 254:0 /srv/data /mnt/with\040space rw shared:1 master:2 - ext4 /dev/vda rw`,
		`41 26 259:1048576 / /big rw - xfs /dev/nvme0n1p1 rw`,
	}, "\n")
	ms, err := Parse([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 3 {
		t.Fatalf("%d mounts", len(ms))
	}
	if m := ms[1]; m.ID != 40 || m.Root != "/srv/data" || m.Point != "/mnt/with space" || m.FSType != "ext4" ||
		m.Dev != unix.Mkdev(254, 0) {
		t.Errorf("mount: %+v", m)
	}
	if ms[2].Dev != unix.Mkdev(259, 1048576) {
		t.Errorf("large minor: %x, want %x", ms[2].Dev, unix.Mkdev(259, 1048576))
	}
	if _, err := Parse([]byte("garbage\n")); err == nil {
		t.Error("garbage parsed")
	}
}

func TestUnescape(t *testing.T) {
	for in, want := range map[string]string{`/a\040b`: "/a b", `/plain`: "/plain", `/x\134y`: `/x\y`, `/odd\04`: `/odd\04`} {
		if got := unescape(in); got != want {
			t.Errorf("unescape(%q) = %q, want %q", in, got, want)
		}
	}
}

// An overlay's upper and work directories, as Docker's mountinfo in a
// container shows them (paths of the host's), escapes undone.
func TestOverlayLayers(t *testing.T) {
	data := strings.Join([]string{
		`600 500 0:52 / / rw,relatime master:300 - overlay overlay rw,lowerdir=/var/lib/docker/overlay2/l/A:/var/lib/docker/overlay2/l/B,upperdir=/var/lib/docker/overlay2/abc/diff,workdir=/var/lib/docker/overlay2/abc/work,uuid=on`,
		`601 600 0:53 / /ro rw - overlay overlay ro,lowerdir=/a:/b`,
		`602 600 0:54 / /sp rw - overlay overlay rw,lowerdir=/l,upperdir=/x\054y/up\040per,workdir=/x/work`,
		`603 600 254:0 /vol /builds rw - ext4 /dev/vda rw`,
	}, "\n")
	ms, err := Parse([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range [][]string{
		{"/var/lib/docker/overlay2/abc/diff", "/var/lib/docker/overlay2/abc/work"},
		nil,
		{"/x,y/up per", "/x/work"},
		nil,
	} {
		if got := ms[i].OverlayLayers(); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("%s: layers %q, want %q", ms[i].Point, got, want)
		}
	}
}
