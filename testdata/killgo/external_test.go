package killgo_test

import "testing"

func TestExternal(t *testing.T) {}
