// Package resolve tells which sandbox ("pause") image a Kubernetes node's
// container runtime really uses, from every source that names one, with
// provenance, conflicts, the patterns to pin it with and a pre-pull list.
//
// Call [Resolve] with the node's root file system (nil means "/"; for a
// node image or a mounted disk use [DirFS], which confines every path and
// symbolic link to it like a chroot) and whatever else is known:
//
//	res, err := resolve.Resolve(ctx, resolve.Options{
//		Live:           client,    // optional: a criinfo/cri client
//		KubeadmVersion: "v1.31.2", // optional: the kubeadm that installs the node
//		KubeletVersion: "v1.31.2", // optional
//	})
//	// res.SandboxImage, res.Conflicts, res.Pins (in res.PinMode), res.Prepull
//
// Resolve only reads: files under Options.Root and one Info call on
// Options.Live. It keeps no state and is safe for concurrent use. The zero
// [Options] reads the real node and asks no socket.
//
// # More
//
// The sources and their files, how versions are found, the authority
// between sources, what is a conflict or a note, the pins and the pre-pull
// list, and the limits that make a node root safe to read as hostile input
// are described in docs/resolve.md. Every release fact (defaults, pinning
// behaviour per version, kubeadm's pause table) is a row of
// resolve/internal/releases that names the upstream file and tag, or the
// live test, it was read from; docs/design.md shows how a node flows
// through the package.
package resolve
