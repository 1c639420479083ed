// Package nodefs is package resolve's view of the node's files:
//
//   - [DirFS], the root-confined file system resolve exports under the same
//     name;
//   - [Budget] and [Source], the limits of one Resolve call on what it reads
//     (bytes, files, directory entries, path depth), and [ReadFile], the one
//     way a node file is read;
//   - [ConfigError], the error that names a node file, its line and key,
//     and the sentinels [ErrInvalidConfig], [ErrLimit] and [ErrNotRegular],
//     which resolve exports under the same names and values.
package nodefs
