package allowlist

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// GoEnvTimeout bounds how long DefaultGoEnv and RunGoEnv wait for `go env`.
const GoEnvTimeout = 10 * time.Second

// DefaultGoEnv runs `go env -json GOCACHE GOMODCACHE GOTELEMETRYDIR` as the
// current user and returns what it prints. When go is not installed it
// returns no variables and no error. Use it as Options.GoEnv with
//
//	GoEnv: func() (map[string]string, error) { return allowlist.DefaultGoEnv(ctx) }
func DefaultGoEnv(ctx context.Context) (map[string]string, error) {
	return RunGoEnv(ctx, nil)
}

// RunGoEnv is DefaultGoEnv with a hook: prepare, if not nil, may change the
// command before it starts, for instance its environment, directory or
// credentials, to see the caches of the user that runs the tests.
func RunGoEnv(ctx context.Context, prepare func(*exec.Cmd)) (map[string]string, error) {
	ctx, cancel := context.WithTimeout(ctx, GoEnvTimeout)
	defer cancel()
	args := append([]string{"env", "-json"}, goEnvVars...)
	cmd := exec.CommandContext(ctx, "go", args...)
	if errors.Is(cmd.Err, exec.ErrNotFound) {
		return nil, nil
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if prepare != nil {
		prepare(cmd)
	}
	out, err := cmd.Output()
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return nil, nil
		}
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return nil, fmt.Errorf("go env: %w: %s", err, msg)
		}
		return nil, fmt.Errorf("go env: %w", err)
	}
	var env map[string]string
	if err := json.Unmarshal(out, &env); err != nil {
		return nil, fmt.Errorf("go env: reading its output: %w", err)
	}
	return env, nil
}
