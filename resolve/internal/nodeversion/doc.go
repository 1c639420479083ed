// Package nodeversion tells the versions of a node's runtime, kubelet and
// kubeadm from the node's files, without running anything:
//
//   - buildinfo.go: a binary's Go build info (its main module's version or
//     an -X version stamp in its recorded -ldflags), read through
//     io.ReaderAt with a bound on the bytes read;
//   - dpkg.go: the dpkg status database's installed packages, with Debian
//     versions turned into upstream ones;
//   - reader.go: [Reader], which looks for each [Component]'s binary where
//     a unit's ExecStart names it and in the binary directories, then in the
//     package database, and [Decide], which picks the most authoritative
//     [Fact] and notes the others that disagree.
package nodeversion
