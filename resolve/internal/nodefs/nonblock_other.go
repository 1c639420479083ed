//go:build !unix

package nodefs

// oNonblock is 0 where opens of special files do not block this way.
const oNonblock = 0
