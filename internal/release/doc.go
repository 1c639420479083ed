// Package release makes what a sandboxpin release publishes besides its git
// tags, reproducibly: a file-system module proxy serving the tagged modules
// (so that a release can be installed and imported before it is pushed),
// the DaemonSet's image as an OCI image layout archive, and an SPDX SBOM of
// a binary from its Go build info. scripts/release.sh drives it through the
// releasetool command.
//
//	err := release.AddModule(proxyDir, "v0.1.0", when,
//		release.Source{Root: repo, Subdir: "cmd", Rev: "cmd/v0.1.0"})
//	// GOPROXY=file://proxyDir,https://proxy.golang.org go install …/cmd/sandboxpin@v0.1.0
//
// # Reproducibility
//
// Every output is a function of its inputs alone: module zips hold the files
// of a git revision, the image's files and archive entries carry the Unix
// epoch as their time and uid/gid 0, the SBOM's creation time is given by
// the caller (the release commit's). The image's layer is compressed with
// compress/gzip, so its digest is stable for one Go release; a Go release
// whose compressor writes other bytes gives the same image another digest.
package release
