package gosuite

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

func open(t *testing.T) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestPutGet(t *testing.T) {
	s := open(t)
	if err := s.Put("a", []byte("1")); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Get("a"); err != nil || string(v) != "1" {
		t.Fatalf("Get = %q, %v", v, err)
	}
}

func TestOverwrite(t *testing.T) {
	s := open(t)
	for i := range 100 {
		if err := s.Put("k", []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	if v, _ := s.Get("k"); string(v) != "99" {
		t.Fatalf("Get = %q", v)
	}
}

func TestDelete(t *testing.T) {
	s := open(t)
	s.Put("gone", nil)
	if err := s.Delete("gone"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get("gone"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Get after Delete: %v", err)
	}
}

func TestKeys(t *testing.T) {
	s := open(t)
	for _, k := range []string{"c", "a", "b"} {
		s.Put(k, []byte(k))
	}
	keys, err := s.Keys()
	if err != nil || fmt.Sprint(keys) != "[a b c]" {
		t.Fatalf("Keys = %v, %v", keys, err)
	}
}

func TestBadKeys(t *testing.T) {
	s := open(t)
	for _, k := range []string{"", ".", "..", "a/b", "x\x00"} {
		if err := s.Put(k, nil); !errors.Is(err, ErrBadKey) {
			t.Errorf("Put(%q) = %v, want ErrBadKey", k, err)
		}
	}
}

func TestManyKeys(t *testing.T) {
	s := open(t)
	for i := range 500 {
		if err := s.Put(fmt.Sprintf("key%03d", i), bytes.Repeat([]byte{'x'}, i)); err != nil {
			t.Fatal(err)
		}
	}
	if keys, _ := s.Keys(); len(keys) != 500 {
		t.Fatalf("%d keys", len(keys))
	}
}

func TestConcurrentPuts(t *testing.T) {
	s := open(t)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				if err := s.Put(fmt.Sprintf("g%d-%d", g, i), []byte("v")); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if keys, _ := s.Keys(); len(keys) != 400 {
		t.Fatalf("%d keys", len(keys))
	}
}
