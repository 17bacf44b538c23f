// Package sample is a tiny app whose test suite has the habits writewatch
// exists to catch.
package sample

import (
	"os"
	"path/filepath"
)

// SaveConfig writes the app's config into dir.
func SaveConfig(dir, content string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "config.toml"), []byte(content), 0o644)
}

// UserConfigDir is where the app keeps its config for the current user.
func UserConfigDir() string {
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".config", "sample")
}
