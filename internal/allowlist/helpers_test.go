package allowlist

import (
	"io/fs"
	"path"
	"strings"
	"testing/fstest"
	"time"
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
		lstat: func(name string) (fs.FileInfo, error) {
			if _, ok := links[name]; ok {
				return linkInfo(name), nil
			}
			return fs.Stat(m, rel(name))
		},
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

// linkInfo is the FileInfo of a symbolic link in fakeFS.
type linkInfo string

func (l linkInfo) Name() string     { return path.Base(string(l)) }
func (linkInfo) Size() int64        { return 0 }
func (linkInfo) Mode() fs.FileMode  { return fs.ModeSymlink | 0o777 }
func (linkInfo) ModTime() time.Time { return time.Time{} }
func (linkInfo) IsDir() bool        { return false }
func (linkInfo) Sys() any           { return nil }
