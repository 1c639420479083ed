//go:build unix

package remedy

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"time"
)

// lock takes an exclusive flock(2) on the root directory itself (no file
// is made), waiting while another run holds it, until ctx ends.
func lock(ctx context.Context, dir string) (func(), error) {
	d, err := os.Open(dir) //nolint:gosec // G703: the root the caller names, opened to lock it
	if err != nil {
		return nil, fmt.Errorf("remedy: root: %w", err)
	}
	for {
		err = syscall.Flock(int(d.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			break
		}
		select {
		case <-ctx.Done():
			_ = d.Close()
			return nil, fmt.Errorf("remedy: waiting for another run's lock on %s: %w", dir, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	if err != nil {
		_ = d.Close()
		return nil, &fs.PathError{Op: "lock", Path: dir, Err: err}
	}
	return func() { _ = d.Close() }, nil
}

// owner returns a file's owner and group.
func owner(fi fs.FileInfo) (int, int) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid), int(st.Gid)
	}
	return -1, -1
}

// oNonblock keeps an open of a FIFO that replaced a file from blocking.
const oNonblock = syscall.O_NONBLOCK
