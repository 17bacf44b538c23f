package allowlist

import (
	"io/fs"
	"strings"
	"testing/fstest"
)

// mapEnv returns a Getenv that looks names up in m.
func mapEnv(m map[string]string) func(string) string {
	return func(name string) string { return m[name] }
}

// fakeFS is a file system holding files (absolute path to contents).
// Directories exist where files imply them. links maps absolute paths to
// what they resolve to; evalSymlinks replaces the longest linked prefix of a
// path, and fails for other paths that do not exist.
func fakeFS(files map[string]string, links map[string]string) fileSystem {
	m := fstest.MapFS{}
	for name, data := range files {
		m[strings.TrimPrefix(name, "/")] = &fstest.MapFile{Data: []byte(data)}
	}
	rel := func(name string) string {
		if name == "/" {
			return "."
		}
		return strings.TrimPrefix(name, "/")
	}
	return fileSystem{
		stat: func(name string) (fs.FileInfo, error) { return fs.Stat(m, rel(name)) },
		readConfig: func(name string) ([]byte, bool, error) {
			data, err := fs.ReadFile(m, rel(name))
			return data, false, err
		},
		evalSymlinks: func(name string) (string, error) {
			best := ""
			for from := range links {
				if (name == from || strings.HasPrefix(name, from+"/")) && len(from) > len(best) {
					best = from
				}
			}
			if best == "" {
				if _, err := fs.Stat(m, rel(name)); err != nil {
					return "", err
				}
				return name, nil
			}
			return links[best] + name[len(best):], nil
		},
	}
}
