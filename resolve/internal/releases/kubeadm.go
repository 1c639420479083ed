package releases

import (
	"fmt"
	"strings"
)

// kubeadmPause is the pause tag kubeadm pre-pulls and expects as the
// runtime's sandbox image (constants.PauseVersion in cmd/kubeadm/app/constants
// of module k8s.io/kubernetes at the tags named), per range of releases,
// oldest first. To add a release, read its PauseVersion and either raise the
// last row's Until (same tag) or append a row; a release after the last row
// is an error, not a guess. kubeadm 1.11 is not here: it lists
// "pause-<GOARCH>:3.1", a name that depends on the architecture kubeadm runs
// on (cmd/kubeadm/app/images/images.go @v1.11.0).
var kubeadmPause = []Row{
	{Kubeadm, Range{"1.12", "1.18"}, "3.1", "cmd/kubeadm/app/images/images.go GetGenericImage(repo, \"pause\", \"3.1\") @v1.12.0; constants.go PauseVersion @v1.17.0"},
	{Kubeadm, Range{"1.18", "1.21"}, "3.2", "cmd/kubeadm/app/constants/constants_unix.go PauseVersion @v1.18.0, @v1.20.0"},
	{Kubeadm, Range{"1.21", "1.22"}, "3.4.1", "cmd/kubeadm/app/constants/constants.go PauseVersion @v1.21.0"},
	{Kubeadm, Range{"1.22", "1.23"}, "3.5", "constants.go PauseVersion @v1.22.0, @v1.22.16, @v1.22.17"},
	{Kubeadm, Range{"1.23", "1.24"}, "3.6", "constants.go PauseVersion @v1.23.0, @v1.23.14, @v1.23.15"},
	{Kubeadm, Range{"1.24", "1.25"}, "3.7", "constants.go PauseVersion @v1.24.0, @v1.24.9"},
	{Kubeadm, Range{"1.25", "1.26"}, "3.8", "constants.go PauseVersion @v1.25.0"},
	{Kubeadm, Range{"1.26", "1.31"}, "3.9", "constants.go PauseVersion @v1.26.0, @v1.30.0"},
	{Kubeadm, Range{"1.31", "1.34"}, "3.10", "constants.go PauseVersion @v1.31.0, @v1.33.0"},
	{Kubeadm, Range{"1.34", "1.36"}, "3.10.1", "constants.go PauseVersion @v1.34.0, @v1.35.0"},
	{Kubeadm, Range{"1.36", "1.38.0-beta.1"}, "3.10.2", "constants.go PauseVersion @v1.36.0, @v1.36.3, @v1.37.0, @v1.37.2, @v1.38.0-beta.0 " +
		"(the newest the Go module proxy serves; v1beta4/defaults.go DefaultImageRepository registry.k8s.io)"},
}

// KubeadmNewest is the newest kubeadm whose PauseVersion was read: the
// last row of kubeadmPause ends right after it.
const KubeadmNewest = "v1.38.0-beta.0"

// kubeadmRepository is kubeadm's default imageRepository
// (DefaultImageRepository in cmd/kubeadm/app/apis/kubeadm/<api>/defaults.go):
// registry.k8s.io from the patch releases that back-ported the registry move.
// A pre-release of one of those patches (v1.24.9-rc.0) is taken to predate
// the back-port, as semver ordering says (not read); v1.24.8 and the patch
// pre-releases could not be downloaded.
var kubeadmRepository = []Row{
	{Kubeadm, Range{"", "1.22.17"}, "k8s.gcr.io", "defaults.go @v1.22.16"},
	{Kubeadm, Range{"1.22.17", "1.23"}, "registry.k8s.io", "defaults.go @v1.22.17"},
	{Kubeadm, Range{"1.23", "1.23.15"}, "k8s.gcr.io", "defaults.go @v1.23.14"},
	{Kubeadm, Range{"1.23.15", "1.24"}, "registry.k8s.io", "defaults.go @v1.23.15"},
	{Kubeadm, Range{"1.24", "1.24.9"}, "k8s.gcr.io", "defaults.go @v1.24.0"},
	{Kubeadm, Range{"1.24.9", ""}, "registry.k8s.io", "defaults.go @v1.24.9, @v1.25.0-rc.0, @v1.25.0"},
}

// kubeadmPreReleases are the pre-release tags of x.y.0 read for the minors
// whose PauseVersion changed during the cycle, keyed by Version.String():
// the bump lands between the alpha.0 tag (cut from the master branch) and
// the release, so such a minor's pre-releases that were not read are
// unknown. Tags the Go module proxy refuses ("not available") could not be
// read: v1.25.0-alpha.1/.2/.3/beta.0, v1.26.0-alpha.2/.3/beta.0,
// v1.34.0-rc.0, v1.36.0-alpha.0/.1, v1.31.0-alpha.0/.1/rc.0 and the alpha.0
// of 1.18, 1.21 to 1.24. Value is repository + "/pause:" + PauseVersion.
var kubeadmPreReleases = []Row{
	{Kubeadm, Range{"1.25.0-alpha.0", "1.25.0-alpha.1"}, "k8s.gcr.io/pause:3.7", "constants.go PauseVersion, v1beta3/defaults.go DefaultImageRepository @v1.25.0-alpha.0"},
	{Kubeadm, Range{"1.25.0-rc.0", "1.25.0-rc.1"}, "registry.k8s.io/pause:3.8", "@v1.25.0-rc.0"},
	{Kubeadm, Range{"1.26.0-alpha.0", "1.26.0-alpha.2"}, "registry.k8s.io/pause:3.8", "@v1.26.0-alpha.0, @v1.26.0-alpha.1"},
	{Kubeadm, Range{"1.34.0-alpha.0", "1.34.0-beta.1"}, "registry.k8s.io/pause:3.10", "@v1.34.0-alpha.0 … alpha.3, @v1.34.0-beta.0"},
	{Kubeadm, Range{"1.36.0-rc.0", "1.36.0-rc.1"}, "registry.k8s.io/pause:3.10.2", "@v1.36.0-rc.0"},
	{Kubeadm, Range{"1.38.0-beta.0", "1.38.0-beta.1"}, "registry.k8s.io/pause:3.10.2", "@v1.38.0-beta.0"},
}

// KubeadmPauseImage returns imageRepository + "/pause:" + the PauseVersion
// compiled into kubeadm v, with kubeadm's default repository for v when
// imageRepository is empty. in is v as the caller wrote it, for errors.
// A pre-release of x.y.0 has its minor's pause tag when the previous minor
// had the same one; in a minor whose tag changed during the cycle only the
// pre-releases read are known.
func KubeadmPauseImage(in string, v Version, imageRepository string) (string, error) {
	row, ok := lookup(kubeadmPause, Kubeadm, v)
	if !ok && v.Major == 1 && v.Minor == 11 {
		return "", fmt.Errorf("kubeadm version %q: %w: kubeadm 1.11 pulls pause-<architecture>:3.1, a name that depends on the node",
			in, ErrUnknownVersion)
	}
	if !ok {
		return "", fmt.Errorf("kubeadm version %q: %w: no pause version known for it (newest read: %s)",
			in, ErrUnknownVersion, KubeadmNewest)
	}
	pause := row.Value
	repo, _ := lookup(kubeadmRepository, Kubeadm, v)
	img := repo.Value + "/pause:" + pause
	if v.Pre != "" && v.Patch == 0 {
		// A pre-release of x.y.0 is tagged on the master branch during the
		// cycle; a pre-release of a patch (1.24.9-rc.0) is cut from the
		// release branch and has its minor's PauseVersion.
		if pre, ok := lookup(kubeadmPreReleases, Kubeadm, v); ok {
			img = pre.Value
		} else if prev, ok := lookup(kubeadmPause, Kubeadm, Version{Major: v.Major, Minor: v.Minor - 1}); !ok || prev.Value != pause {
			return "", fmt.Errorf("kubeadm version %q: %w: PauseVersion changed from %s to %s during the 1.%d cycle "+
				"and this pre-release was not read", in, ErrUnknownVersion, prev.Value, pause, v.Minor)
		}
	}
	if r := strings.TrimSuffix(strings.TrimSpace(imageRepository), "/"); r != "" {
		img = r + "/pause:" + img[strings.LastIndex(img, ":")+1:]
	}
	return img, nil
}
