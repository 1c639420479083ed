//go:build unix

package crishim

import (
	"fmt"
	"os"
	"syscall"
)

// matchSocket gives the shim's socket at path the mode, owner and group of
// the runtime's socket at runtimePath, so that exactly who may talk to the
// runtime may talk to the shim. A runtime socket that does not exist yet
// leaves the shim's as the umask made it.
func matchSocket(path, runtimePath string) error {
	fi, err := os.Stat(runtimePath)
	if err != nil {
		return nil //nolint:nilerr // no runtime socket yet: nothing to match
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if err := os.Chown(path, int(st.Uid), int(st.Gid)); err != nil {
		return fmt.Errorf("give the shim's socket the runtime socket's owner %d:%d: %w", st.Uid, st.Gid, err)
	}
	if err := os.Chmod(path, fi.Mode().Perm()); err != nil {
		return fmt.Errorf("give the shim's socket the runtime socket's mode %v: %w", fi.Mode().Perm(), err)
	}
	return nil
}
