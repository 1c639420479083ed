//go:build unix

package nodefs

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOpenNonBlocking opens a FIFO through the path that regular files
// take, as a tree that changes between Stat and Open would make it: the
// open must not block, and the mode check on the open file refuses it.
func TestOpenNonBlocking(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600))
	r, err := os.OpenRoot(dir)
	require.NoError(t, err)
	defer r.Close()
	done := make(chan error, 1)
	go func() {
		f, err := r.OpenFile("fifo", os.O_RDONLY|oNonblock, 0)
		if err == nil {
			fi, serr := f.Stat()
			require.NoError(t, serr)
			err = CheckOpenable(fi.Mode())
			_ = f.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, ErrNotRegular)
	case <-time.After(5 * time.Second):
		t.Fatal("a non-blocking open of a FIFO blocked")
	}
}
