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
//	containerd  1.5.0–1.5.13     k8s.gcr.io/pause:3.5
//	            1.5.14–1.5.x     registry.k8s.io/pause:3.5
//	            1.6.0–1.6.8      k8s.gcr.io/pause:3.6
//	            1.6.9–1.6.x      registry.k8s.io/pause:3.6
//	            1.7              registry.k8s.io/pause:3.8
//	            2.0.0-beta.0–rc.2 registry.k8s.io/pause:3.9
//	            2.0.0-rc.3–2.1.x registry.k8s.io/pause:3.10
//	            2.2, 2.3.0-beta.0 registry.k8s.io/pause:3.10.1
//	            2.3.0-beta.1–2.4.x registry.k8s.io/pause:3.10.2
//	cri-o       ≤1.17            k8s.gcr.io/pause:3.1
//	            1.18–1.20        k8s.gcr.io/pause:3.2
//	            1.21–1.22        k8s.gcr.io/pause:3.5
//	            1.23             k8s.gcr.io/pause:3.6
//	            1.24–1.27.0      registry.k8s.io/pause:3.6
//	            1.27.1–1.30      registry.k8s.io/pause:3.9
//	            1.31–1.33        registry.k8s.io/pause:3.10
//	            1.34 and later   registry.k8s.io/pause:3.10.1
//	cri-dockerd 0.2.0            k8s.gcr.io/pause:3.1
//	            0.2.1–0.2.5      k8s.gcr.io/pause:3.6
//	            0.2.6–0.3.9      registry.k8s.io/pause:3.6
//	            0.3.10–0.3.16    registry.k8s.io/pause:3.9
//	            0.3.17–0.4.x     registry.k8s.io/pause:3.10
//
// cri-dockerd's version is its own (`cri-dockerd --version`), never the
// RuntimeVersion of its CRI Version RPC, which is the Docker Engine's.
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

// containerdDefault is containerd's default sandbox image. Rows, each read
// at the tags named: 1.x from SandboxImage in pkg/cri/config/config_unix.go
// (v1.5.0, v1.5.13: k8s.gcr.io/pause:3.5; v1.5.14, v1.5.18:
// registry.k8s.io/pause:3.5; v1.6.0, v1.6.8: k8s.gcr.io/pause:3.6; v1.6.9:
// registry.k8s.io/pause:3.6; v1.7.0-beta.0, v1.7.0, v1.7.35:
// registry.k8s.io/pause:3.8); 2.x from DefaultSandboxImage in
// pkg/cri/config/config_unix.go (v2.0.0-beta.0), pkg/cri/config/config.go
// (v2.0.0-beta.1, -beta.2) and internal/cri/config/config.go (later):
// 3.9 at v2.0.0-beta.0 … v2.0.0-rc.2, 3.10 at v2.0.0-rc.3 … v2.0.0 and
// v2.1.0, 3.10.1 at v2.2.0, v2.2.9 and v2.3.0-beta.0, 3.10.2 at
// v2.3.0-beta.1, v2.3.0, v2.3.7, v2.4.0-beta.0 and v2.4.2. A version not
// below returns "", an unknown version.
func containerdDefault(v version) string {
	// pre reports whether v is a pre-release of major.minor.patch before
	// the one named (by the order of "beta.N" < "rc.N").
	preBefore := func(pre string) bool { return v.pre != "" && preLess(v.pre, pre) }
	switch {
	case v.major == 1 && v.minor == 5:
		if v.patch <= 13 {
			return registryGCR + "/pause:3.5"
		}
		return registryK8s + "/pause:3.5"
	case v.major == 1 && v.minor == 6:
		if v.patch <= 8 {
			return registryGCR + "/pause:3.6"
		}
		return registryK8s + "/pause:3.6"
	case v.major == 1 && v.minor == 7:
		return registryK8s + "/pause:3.8"
	case v.major == 2 && v.minor == 0 && v.patch == 0 && preBefore("rc.3"):
		return registryK8s + "/pause:3.9"
	case v.major == 2 && (v.minor == 0 || v.minor == 1):
		return registryK8s + "/pause:3.10"
	case v.major == 2 && v.minor == 2,
		v.major == 2 && v.minor == 3 && v.patch == 0 && preBefore("beta.1"):
		return registryK8s + "/pause:3.10.1"
	case v.major == 2 && (v.minor == 3 || v.minor == 4):
		return registryK8s + "/pause:3.10.2"
	}
	return ""
}

// preLess orders containerd's pre-release names: "beta.N" before "rc.N",
// each by N. Anything else sorts after them.
func preLess(a, b string) bool {
	rank := func(p string) (int, int) {
		kind, n, _ := strings.Cut(p, ".")
		num, err := strconv.Atoi(n)
		if err != nil {
			num = 0
		}
		switch kind {
		case "alpha":
			return 0, num
		case "beta":
			return 1, num
		case "rc":
			return 2, num
		}
		return 3, num
	}
	ka, na := rank(a)
	kb, nb := rank(b)
	return ka < kb || ka == kb && na < nb
}

// containerdConfig4 reports whether containerd v reads config version 4
// (version.ConfigVersion = 4 in version/version.go from v2.3.0-rc.0; 3 at
// v2.3.0-beta.0 … -beta.2 and in 2.0–2.2), which also means it migrates a
// version 3 file's sandbox_image.
func containerdConfig4(v version) bool {
	switch {
	case v.major != 2:
		return v.major > 2
	case v.minor != 3:
		return v.minor > 3
	}
	return v.patch > 0 || v.pre == "" || !preLess(v.pre, "rc.0")
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

// criDockerdDefault is the default of cri-dockerd's
// --pod-infra-container-image: defaultPodSandboxImageName and
// defaultPodSandboxImageVersion in cmd/cri/options/options.go
// (src/cmd/cri/options/options.go at v0.2.0), read at v0.2.0
// (k8s.gcr.io/pause:3.1), v0.2.1 and v0.2.5 (k8s.gcr.io/pause:3.6), v0.2.6,
// v0.3.0 and v0.3.9 (registry.k8s.io/pause:3.6), v0.3.10 and v0.3.16 (3.9),
// v0.3.17, v0.4.0 and v0.4.3 (3.10). 0.5 and later are unknown.
func criDockerdDefault(v version) string {
	switch {
	case v.major != 0:
		return ""
	case v.minor == 2 && v.patch == 0:
		return registryGCR + "/pause:3.1"
	case v.minor == 2 && v.patch <= 5:
		return registryGCR + "/pause:3.6"
	case v.minor == 2:
		return registryK8s + "/pause:3.6"
	case v.minor == 3 && v.patch <= 9:
		return registryK8s + "/pause:3.6"
	case v.minor == 3 && v.patch <= 16:
		return registryK8s + "/pause:3.9"
	case v.minor == 3 || v.minor == 4:
		return registryK8s + "/pause:3.10"
	}
	return ""
}
