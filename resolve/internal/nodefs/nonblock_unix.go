//go:build unix

package nodefs

import "syscall"

// oNonblock makes an open that races with a swap to a FIFO return at once.
const oNonblock = syscall.O_NONBLOCK
