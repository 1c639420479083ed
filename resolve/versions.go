package resolve

import (
	"fmt"

	"github.com/sandboxpin/sandboxpin/criinfo"
	"github.com/sandboxpin/sandboxpin/resolve/internal/releases"
)

// version is a parsed release version; the release facts and their
// ordering live in package releases.
type version = releases.Version

// parseVersion is releases.ParseVersion, the one reading of versions:
// "v1.31.0-rc.1" and "v1.18.0-rc1" are pre-releases; "v2.3.4-k3s1",
// "v1.36.3+rke2r1", "1.6.20~ds1-1+deb12u3" and "1.7.28-0ubuntu1" are the
// release they build. Every error wraps ErrUnknownVersion.
func parseVersion(s string) (version, error) { return releases.ParseVersion(s) }

// Runtime names as component names (Note.Component, the resolver's
// runtime): the strings of criinfo's Runtime constants.
const (
	runtimeContainerd = ComponentContainerd
	runtimeCRIO       = ComponentCRIO
	runtimeCRIDockerd = ComponentCRIDockerd
)

// RuntimeDefaultImage returns the sandbox image a runtime uses when its
// configuration does not name one. runtime is [criinfo.RuntimeContainerd],
// [criinfo.RuntimeCRIO] or [criinfo.RuntimeCRIDockerd]; any other (the
// unknown runtime "" included) returns an error wrapping
// [criinfo.ErrUnknownRuntime]. version is the runtime's version as it
// reports it ("v1.7.20", "1.6.20~ds1", "2.2.0-rc.1", "v2.3.4-k3s1": a
// distribution's build is the release it builds). A version outside the
// tables, or a malformed one, returns an error wrapping [ErrUnknownVersion].
//
// The tables, each row with the upstream file and tag it was read from,
// are rows of resolve/internal/releases, listed in docs/release-facts.md.
// cri-dockerd's version is its own (`cri-dockerd --version`), never the
// RuntimeVersion of its CRI Version RPC, which is the Docker Engine's.
func RuntimeDefaultImage(runtime criinfo.Runtime, version string) (string, error) {
	switch runtime {
	case criinfo.RuntimeContainerd, criinfo.RuntimeCRIO, criinfo.RuntimeCRIDockerd:
	default:
		return "", fmt.Errorf("resolve: runtime %q: %w: no defaults known", runtime, criinfo.ErrUnknownRuntime)
	}
	v, err := parseVersion(version)
	if err != nil {
		return "", fmt.Errorf("resolve: %s version: %w", runtime, err)
	}
	row, err := releases.DefaultImage(string(runtime), v)
	if err != nil {
		return "", fmt.Errorf("resolve: %s %q: %w: no default sandbox image known for it", runtime, version, ErrUnknownVersion)
	}
	return row.Value, nil
}

// containerdConfig4 reports whether containerd v reads config version 4,
// which also means it migrates a version 3 file's sandbox_image.
func containerdConfig4(v version) bool {
	_, ok := releases.ContainerdConfig4.Holds(v)
	return ok
}

// kubeletDefaultSandbox is the kubelet's built-in
// --pod-infra-container-image at version v, "" where none is known.
func kubeletDefaultSandbox(v version) string {
	row, err := releases.DefaultImage(releases.Kubelet, v)
	if err != nil {
		return ""
	}
	return row.Value
}
