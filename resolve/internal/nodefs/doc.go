// Package nodefs holds what package resolve's readers share about the node's
// file system: the sentinel errors [ErrLimit] and [ErrNotRegular], which
// resolve exports under the same names and values.
package nodefs
