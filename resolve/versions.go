package resolve

import (
	"fmt"
	"strconv"
	"strings"
)

// version is a parsed release version: major.minor[.patch][-pre][+build].
// A distribution suffix after the numbers ("~ds1", "-0ubuntu4", "+k3s1") is
// kept in pre/build but only a "-" suffix makes it a pre-release.
type version struct {
	major, minor, patch int
	pre                 string // "rc.1" for v1.31.0-rc.1; "" for a release
}

// parseVersion accepts "1.31", "v1.31.2", "v1.31.0-rc.1", "1.7.20+k3s1",
// "1.6.20~ds1". Every error wraps ErrUnknownVersion.
func parseVersion(s string) (version, error) {
	var v version
	in := s
	s = strings.TrimPrefix(strings.TrimPrefix(s, "v"), "V")
	end := strings.IndexAny(s, "-+~")
	suffix := ""
	if end >= 0 {
		suffix, s = s[end:], s[:end]
	}
	parts := strings.Split(s, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return version{}, fmt.Errorf("%w: %q: want major.minor[.patch]", ErrUnknownVersion, in)
	}
	nums := [3]int{}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || p == "" || (len(p) > 1 && p[0] == '0') || len(p) > 6 {
			return version{}, fmt.Errorf("%w: %q: bad number %q", ErrUnknownVersion, in, p)
		}
		nums[i] = n
	}
	v.major, v.minor, v.patch = nums[0], nums[1], nums[2]
	if strings.HasPrefix(suffix, "-") {
		v.pre = suffix[1:]
		if i := strings.IndexByte(v.pre, '+'); i >= 0 {
			v.pre = v.pre[:i]
		}
		if v.pre == "" {
			return version{}, fmt.Errorf("%w: %q: empty pre-release", ErrUnknownVersion, in)
		}
	}
	return v, nil
}

// before reports whether v sorts before major.minor.patch, a release. A
// pre-release of that release sorts before it, as in semver.
func (v version) before(major, minor, patch int) bool {
	switch {
	case v.major != major:
		return v.major < major
	case v.minor != minor:
		return v.minor < minor
	case v.patch != patch:
		return v.patch < patch
	}
	return v.pre != ""
}

func (v version) String() string {
	s := fmt.Sprintf("%d.%d.%d", v.major, v.minor, v.patch)
	if v.pre != "" {
		s += "-" + v.pre
	}
	return s
}

const (
	registryK8s = "registry.k8s.io"
	registryGCR = "k8s.gcr.io"
)

// Runtime names, as in criinfo.Info.Runtime and Result.Runtime.
const (
	runtimeContainerd = "containerd"
	runtimeCRIO       = "cri-o"
	runtimeCRIDockerd = "cri-dockerd"
	runtimeUnknown    = "unknown" // criinfo.Info.Runtime when the runtime did not say
)

// RuntimeDefaultImage returns the sandbox image a runtime uses when its
// configuration does not name one. runtime is "containerd", "cri-o" or
// "cri-dockerd"; version is the runtime's version as it reports it
// ("v1.7.20", "1.6.20~ds1", "2.2.0-rc.1"). A version outside the tables,
// or a malformed one, returns an error wrapping [ErrUnknownVersion].
//
// The tables:
//
//	containerd  1.6.0–1.6.8      k8s.gcr.io/pause:3.6
//	            1.6.9–1.6.x      registry.k8s.io/pause:3.6
//	            1.7              registry.k8s.io/pause:3.8
//	            2.0, 2.1         registry.k8s.io/pause:3.10
//	            2.2              registry.k8s.io/pause:3.10.1
//	            2.3              registry.k8s.io/pause:3.10.2
//	cri-o       ≤1.17            k8s.gcr.io/pause:3.1
//	            1.18–1.20        k8s.gcr.io/pause:3.2
//	            1.21–1.22        k8s.gcr.io/pause:3.5
//	            1.23             k8s.gcr.io/pause:3.6
//	            1.24–1.27.0      registry.k8s.io/pause:3.6
//	            1.27.1–1.30      registry.k8s.io/pause:3.9
//	            1.31–1.33        registry.k8s.io/pause:3.10
//	            1.34 and later   registry.k8s.io/pause:3.10.1
//	cri-dockerd 0.2.x            k8s.gcr.io/pause:3.1
//	            0.3.0–0.3.9      registry.k8s.io/pause:3.6
//	            0.3.10–0.3.16    registry.k8s.io/pause:3.9
//	            0.3.17 and later registry.k8s.io/pause:3.10
func RuntimeDefaultImage(runtime, version string) (string, error) {
	v, err := parseVersion(version)
	if err != nil {
		return "", fmt.Errorf("resolve: %s version: %w", runtime, err)
	}
	var img string
	switch runtime {
	case runtimeContainerd:
		img = containerdDefault(v)
	case runtimeCRIO:
		img = crioDefault(v)
	case runtimeCRIDockerd:
		img = criDockerdDefault(v)
	default:
		return "", fmt.Errorf("resolve: runtime %q: %w: no defaults known", runtime, ErrUnknownVersion)
	}
	if img == "" {
		return "", fmt.Errorf("resolve: %s %q: %w: no default sandbox image known for it",
			runtime, version, ErrUnknownVersion)
	}
	return img, nil
}

// The runtime tables below come from issue 5 and DESIGN.md §6 (containerd's
// DefaultSandboxImage / pinned_images.sandbox, CRI-O's DefaultPauseImage,
// cri-dockerd's default --pod-infra-container-image on each release branch).
// Pre-releases use the table row of their minor release.

func containerdDefault(v version) string {
	switch {
	case v.major == 1 && v.minor == 6:
		if v.patch <= 8 {
			return registryGCR + "/pause:3.6"
		}
		return registryK8s + "/pause:3.6"
	case v.major == 1 && v.minor == 7:
		return registryK8s + "/pause:3.8"
	case v.major == 2 && (v.minor == 0 || v.minor == 1):
		return registryK8s + "/pause:3.10"
	case v.major == 2 && v.minor == 2:
		return registryK8s + "/pause:3.10.1"
	case v.major == 2 && v.minor == 3:
		return registryK8s + "/pause:3.10.2"
	}
	return ""
}

// crioDefault is CRI-O's DefaultPauseImage, each row read in cri-o at the
// tags named (every tag from v1.16.0 to v1.36.3 was checked; a row changes
// only at the first tag listed):
//
//	k8s.gcr.io/pause:3.1        v1.16.0, v1.17.0  pkg/config/config.go (pauseImage)
//	k8s.gcr.io/pause:3.2        v1.18.0–v1.20.x   pkg/config/config.go
//	k8s.gcr.io/pause:3.5        v1.21.0–v1.22.x   pkg/config/config.go (DefaultPauseImage)
//	k8s.gcr.io/pause:3.6        v1.23.0–v1.23.x   pkg/config/config.go
//	registry.k8s.io/pause:3.6   v1.24.0–v1.27.0   pkg/config/config.go
//	registry.k8s.io/pause:3.9   v1.27.1–v1.30.x   pkg/config/config.go, config_linux.go from v1.30.0
//	registry.k8s.io/pause:3.10  v1.31.0–v1.33.x   pkg/config/config_linux.go
//	registry.k8s.io/pause:3.10.1 v1.34.0–v1.36.3  pkg/config/config_linux.go (1.36.3 also seen live:
//	                                              `crio config` prints it)
func crioDefault(v version) string {
	if v.major != 1 {
		return ""
	}
	switch {
	case v.minor <= 17:
		return registryGCR + "/pause:3.1"
	case v.minor <= 20:
		return registryGCR + "/pause:3.2"
	case v.minor <= 22:
		return registryGCR + "/pause:3.5"
	case v.minor == 23:
		return registryGCR + "/pause:3.6"
	case v.minor <= 26 || (v.minor == 27 && v.patch == 0):
		return registryK8s + "/pause:3.6"
	case v.minor <= 30:
		return registryK8s + "/pause:3.9"
	case v.minor <= 33:
		return registryK8s + "/pause:3.10"
	}
	return registryK8s + "/pause:3.10.1"
}

func criDockerdDefault(v version) string {
	switch {
	case v.major != 0:
		return ""
	case v.minor == 2:
		return registryGCR + "/pause:3.1"
	case v.minor == 3 && v.patch <= 9:
		return registryK8s + "/pause:3.6"
	case v.minor == 3 && v.patch <= 16:
		return registryK8s + "/pause:3.9"
	case v.minor >= 3:
		return registryK8s + "/pause:3.10"
	}
	return ""
}
