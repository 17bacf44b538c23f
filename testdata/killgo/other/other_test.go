// Package other is a clean package of the suite: it runs on when the
// first one's binary is killed, and ends well after it.
package other

import (
	"testing"
	"time"
)

func TestOther(t *testing.T) {
	time.Sleep(time.Second)
}
