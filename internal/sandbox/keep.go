package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Keep copies what the sandbox holds of each change the allowlist does
// not allow into dir, at its path under dir (dir/home/u/.config/app/...),
// and lists every change, one a line, in dir/CHANGES: "kind path" (and
// " from FROM" for a moved directory). dir must be empty or not exist.
func (sb *Sandbox) Keep(dir string, changes []Change) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) > 0 {
		return errors.Join(err, fmt.Errorf("%s is not empty", dir))
	}
	var list strings.Builder
	var errs []error
	for _, c := range changes {
		if c.Allowed {
			continue
		}
		fmt.Fprintf(&list, "%s %s", c.Kind, c.Path)
		if c.From != "" {
			fmt.Fprintf(&list, " from %s", c.From)
		}
		list.WriteByte('\n')
		if c.Kind == Removed || c.Kind == Attrib {
			continue
		}
		dst := filepath.Join(dir, c.Path)
		if _, err := os.Lstat(dst); err == nil {
			continue // copied with its directory
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := copyTree(dst, sb.Root()+c.Path); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c.Path, err))
		}
	}
	errs = append(errs, os.WriteFile(filepath.Join(dir, "CHANGES"), []byte(list.String()), 0o644))
	return errors.Join(errs...)
}

// Places says what the sandbox made of the tree: the mount points
// overlaid, and those bound through, each once, in order.
func (sb *Sandbox) Places() (overlaid, real []string) {
	for _, pl := range sb.plan.Places {
		list := &real
		if pl.How == Overlay && sb.isLayer(pl.Path) {
			list = &overlaid
		}
		if !contains1(*list, pl.Path) {
			*list = append(*list, pl.Path)
		}
	}
	return overlaid, real
}

func (sb *Sandbox) isLayer(point string) bool {
	for _, l := range sb.layers {
		if l.point == point {
			return true
		}
	}
	return false
}

func contains1(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
