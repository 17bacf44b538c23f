// Package slowlines prints lines slowly, for the status line's test on a
// terminal (TestStatusLineInTmux): short ones, ones that wrap, ones
// written in two parts with a pause between (as pytest -v writes a
// test's name and then its outcome), and a write outside the allowlist.
package slowlines

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

func TestSlowLines(t *testing.T) {
	for i := 1; i <= 30; i++ {
		switch {
		case i%7 == 0:
			fmt.Printf("slow %02d %s\n", i, strings.Repeat("=", 90))
		case i%5 == 0:
			fmt.Printf("slow %02d test_name_of_some_length ", i)
			time.Sleep(250 * time.Millisecond)
			fmt.Println("PASSED")
		default:
			fmt.Printf("slow %02d\n", i)
		}
		time.Sleep(80 * time.Millisecond)
	}
}

func TestSlowStray(t *testing.T) {
	fmt.Println("stray start")
	if err := os.WriteFile("stray.txt", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	fmt.Println("stray end")
}
