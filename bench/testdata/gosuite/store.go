// Package gosuite is a short Go test suite for make bench: a small
// key-value store on files, whose seven tests write only under
// t.TempDir().
package gosuite

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Store keeps one file per key in a directory.
type Store struct{ dir string }

// Open makes dir if needed.
func Open(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return &Store{dir: dir}, nil
}

// ErrBadKey is a key that cannot name a file.
var ErrBadKey = errors.New("bad key")

func (s *Store) path(key string) (string, error) {
	if key == "" || strings.ContainsAny(key, "/\x00") || key == "." || key == ".." {
		return "", ErrBadKey
	}
	return filepath.Join(s.dir, key), nil
}

// Put writes value under key, through a temporary file and a rename.
func (s *Store) Put(key string, value []byte) error {
	p, err := s.path(key)
	if err != nil {
		return err
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, value, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

// Get reads key's value.
func (s *Store) Get(key string) ([]byte, error) {
	p, err := s.path(key)
	if err != nil {
		return nil, err
	}
	return os.ReadFile(p)
}

// Delete removes key.
func (s *Store) Delete(key string) error {
	p, err := s.path(key)
	if err != nil {
		return err
	}
	return os.Remove(p)
}

// Keys lists the keys, sorted.
func (s *Store) Keys() ([]string, error) {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, err
	}
	var keys []string
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".tmp") {
			keys = append(keys, e.Name())
		}
	}
	sort.Strings(keys)
	return keys, nil
}
