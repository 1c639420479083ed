//go:build !unix

package remedy

import (
	"context"
	"io/fs"
)

// lock is a no-op where flock(2) is not: a node is a Unix system.
func lock(context.Context, string) (func(), error) { return func() {}, nil }

func owner(fs.FileInfo) (int, int) { return -1, -1 }

const oNonblock = 0
