// A suite whose tests pass only in this order: TestA leaves state.json
// in the project, and TestB reads it. TestOwn reads only what it wrote
// itself.
package crosstest

import (
	"os"
	"testing"
)

func TestA(t *testing.T) {
	if err := os.WriteFile("state.json", []byte(`{"ready":true}`), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestB(t *testing.T) {
	data, err := os.ReadFile("state.json")
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != `{"ready":true}` {
		t.Fatalf("state.json: %s", data)
	}
}

func TestOwn(t *testing.T) {
	if err := os.WriteFile("own.txt", []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := os.ReadFile("own.txt"); err != nil {
			t.Fatal(err)
		}
	}
}

// TestParent writes parent.txt and its own subtest reads it: a subtest
// runs inside its parent, which is no order between tests.
func TestParent(t *testing.T) {
	if err := os.WriteFile("parent.txt", []byte("parent"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Run("child", func(t *testing.T) {
		if _, err := os.ReadFile("parent.txt"); err != nil {
			t.Fatal(err)
		}
	})
}
