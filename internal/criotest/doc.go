// Package criotest starts a real CRI-O for tests, without touching the host:
// a temporary socket, storage root and runroot, config file and drop-in
// directory, with every path CRI-O defaults under /var, /etc or /usr moved
// into one temporary directory. Images are loaded offline from OCI archives
// built by [containerdtest.WriteArchive], with skopeo into CRI-O's
// containers-storage.
//
// The configuration is laid out as a node root would be: Dir/etc/crio/crio.conf
// and Dir/etc/crio/crio.conf.d/, so that resolve can read os.DirFS(c.Dir) as
// the node's file system.
//
// CRI-O needs root, and the binaries that scripts/deps.sh provides: crio,
// pinns (SANDBOXPIN_CRIO, SANDBOXPIN_PINNS), conmon, runc and skopeo
// (SANDBOXPIN_CONMON, SANDBOXPIN_RUNC, SANDBOXPIN_SKOPEO, Debian packages).
// Without them [Start] skips the test, or fails it when
// SANDBOXPIN_REQUIRE_RUNTIMES=1; under -short it always skips.
package criotest
