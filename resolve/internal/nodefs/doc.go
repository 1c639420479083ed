// Package nodefs is package resolve's view of the node's files: [DirFS],
// the root-confined file system resolve exports under the same name, and
// the sentinel errors [ErrLimit] and [ErrNotRegular], which resolve exports
// under the same names and values.
package nodefs
