package runtimetest

import (
	"os"
	"path/filepath"
)

// EnvCache names the directory scripts/deps.sh builds the runtimes into.
const EnvCache = "SANDBOXPIN_CACHE"

// CacheDir returns $SANDBOXPIN_CACHE, or ${XDG_CACHE_HOME:-$HOME/.cache}/sandboxpin.
func CacheDir() string {
	if d := os.Getenv(EnvCache); d != "" {
		return d
	}
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			home = "/root"
		}
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "sandboxpin")
}
