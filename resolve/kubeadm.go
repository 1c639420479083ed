package resolve

import (
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"sigs.k8s.io/yaml"
)

// kubeadmConfig is what a kubeadm config file's ClusterConfiguration says.
type kubeadmConfig struct {
	Path              string
	APIVersion        string
	ImageRepository   *found // nil when not set
	KubernetesVersion *found // nil when not set
	CRISocket         *found // nodeRegistration.criSocket of an Init/JoinConfiguration
}

// kubeadmDoc holds the fields read from each YAML document.
type kubeadmDoc struct {
	APIVersion        string `json:"apiVersion"`
	Kind              string `json:"kind"`
	ImageRepository   string `json:"imageRepository"`
	KubernetesVersion string `json:"kubernetesVersion"`
	NodeRegistration  struct {
		CRISocket string `json:"criSocket"`
	} `json:"nodeRegistration"`
}

// yamlLineRE finds the line in a go-yaml error message ("yaml: line 3: ...").
var yamlLineRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`line (\d+)`) })

// readKubeadm reads a kubeadm config file: one or more YAML documents
// separated by "---" lines; the ClusterConfiguration (kubeadm.k8s.io,
// v1beta3 or v1beta4) gives imageRepository and kubernetesVersion, an
// InitConfiguration or JoinConfiguration nodeRegistration.criSocket. Other
// documents (KubeletConfiguration, KubeProxyConfiguration) are skipped.
// Unlike the node's own files, a missing file is an error: the caller named
// it.
func readKubeadm(fsys fs.FS, name string) (*kubeadmConfig, error) {
	b, err := readFile(fsys, name)
	if err != nil {
		return nil, err
	}
	if b == nil {
		return nil, fmt.Errorf("resolve: kubeadm config %s: %w", nodePath(name), fs.ErrNotExist)
	}
	return parseKubeadm(nodePath(name), b)
}

func parseKubeadm(path string, b []byte) (*kubeadmConfig, error) {
	cfg := &kubeadmConfig{Path: path}
	lines := strings.SplitAfter(string(b), "\n")
	start := 0 // index of the first line of the current document
	sawCluster := false
	flush := func(end int) error {
		text := strings.Join(lines[start:end], "")
		if strings.TrimSpace(text) == "" {
			return nil
		}
		var d kubeadmDoc
		if err := yaml.Unmarshal([]byte(text), &d); err != nil {
			line := start + 1
			if m := yamlLineRE().FindStringSubmatch(err.Error()); m != nil {
				if n, cerr := strconv.Atoi(m[1]); cerr == nil {
					line = start + n
				}
			}
			// go-yaml may name the line after the last one for an error at
			// the end of the input.
			line = max(min(line, end), start+1)
			return configErr(path, "", line, err)
		}
		if !strings.HasPrefix(d.APIVersion, "kubeadm.k8s.io/") {
			return nil
		}
		keyLine := func(key string) int {
			for i := start; i < end; i++ {
				if strings.HasPrefix(lines[i], key+":") {
					return i + 1
				}
			}
			return start + 1 // flow style or unusual layout: the document's first line
		}
		switch d.Kind {
		case "ClusterConfiguration":
			if sawCluster {
				return configErr(path, "kind", keyLine("kind"), errors.New("more than one ClusterConfiguration"))
			}
			sawCluster = true
			cfg.APIVersion = d.APIVersion
			if d.ImageRepository != "" {
				cfg.ImageRepository = &found{Value: d.ImageRepository, Path: path, Line: keyLine("imageRepository"), Key: "imageRepository"}
			}
			if d.KubernetesVersion != "" {
				cfg.KubernetesVersion = &found{Value: d.KubernetesVersion, Path: path, Line: keyLine("kubernetesVersion"), Key: "kubernetesVersion"}
			}
		case "InitConfiguration", "JoinConfiguration":
			if s := d.NodeRegistration.CRISocket; s != "" {
				line := start + 1
				for i := start; i < end; i++ {
					if strings.HasPrefix(strings.TrimSpace(lines[i]), "criSocket:") {
						line = i + 1
						break
					}
				}
				cfg.CRISocket = &found{Value: s, Path: path, Line: line, Key: "nodeRegistration.criSocket"}
			}
		}
		return nil
	}
	for i, l := range lines {
		if t := strings.TrimRight(l, " \t\r\n"); t == "---" || strings.HasPrefix(t, "--- ") || t == "..." {
			if err := flush(i); err != nil {
				return nil, err
			}
			start = i + 1
		}
	}
	if err := flush(len(lines)); err != nil {
		return nil, err
	}
	return cfg, nil
}

// kubeadmRelease is what a range of kubeadm minor releases compiles in: the
// pause tag (constants.PauseVersion in cmd/kubeadm/app/constants/constants.go
// of kubernetes/kubernetes) that kubeadm pre-pulls and expects the runtime to
// use as its sandbox image.
type kubeadmRelease struct {
	first, last int    // minor versions of Kubernetes 1.x, inclusive
	pause       string // PauseVersion
}

// kubeadmReleases is kubeadm's PauseVersion per minor release, oldest first.
// Each row names the tags whose cmd/kubeadm/app/constants/constants.go was
// read (module k8s.io/kubernetes from the Go module proxy). To add a release,
// read its PauseVersion and either raise the last row's last (same tag) or
// append a row; a minor after the last row is an error, not a guess.
var kubeadmReleases = [...]kubeadmRelease{
	{first: 11, last: 17, pause: "3.1"},    // v1.11.0, v1.17.0
	{first: 18, last: 20, pause: "3.2"},    // v1.18.0, v1.20.0
	{first: 21, last: 21, pause: "3.4.1"},  // v1.21.0
	{first: 22, last: 22, pause: "3.5"},    // v1.22.0, v1.22.16, v1.22.17
	{first: 23, last: 23, pause: "3.6"},    // v1.23.0, v1.23.14, v1.23.15
	{first: 24, last: 24, pause: "3.7"},    // v1.24.0, v1.24.8, v1.24.9
	{first: 25, last: 25, pause: "3.8"},    // v1.25.0
	{first: 26, last: 30, pause: "3.9"},    // v1.26.0, v1.30.0
	{first: 31, last: 33, pause: "3.10"},   // v1.31.0, v1.33.0
	{first: 34, last: 35, pause: "3.10.1"}, // v1.34.0, v1.35.0
	{first: 36, last: 37, pause: "3.10.2"}, // v1.36.0, v1.36.3, v1.37.0, v1.37.2
}

// kubeadmPreReleases are the pre-release tags whose constants differ from
// their minor's row: an alpha.0 tag is cut from the master branch before the
// cycle's bumps land. Keyed by version.String(). Pre-releases not listed
// here get their minor's row.
var kubeadmPreReleases = map[string]struct{ pause, repo string }{
	// v1.25.0-alpha.0: constants.go PauseVersion = "3.7";
	// apis/kubeadm/v1beta3/defaults.go DefaultImageRepository = "k8s.gcr.io".
	"1.25.0-alpha.0": {pause: "3.7", repo: registryGCR},
	// v1.26.0-alpha.0: constants.go PauseVersion = "3.8".
	"1.26.0-alpha.0": {pause: "3.8", repo: registryK8s},
	// v1.34.0-alpha.0: constants.go PauseVersion = "3.10";
	// apis/kubeadm/v1beta4/defaults.go DefaultImageRepository = "registry.k8s.io".
	"1.34.0-alpha.0": {pause: "3.10", repo: registryK8s},
}

// kubeadmDefaultRepository returns kubeadm's default imageRepository
// (DefaultImageRepository in cmd/kubeadm/app/apis/kubeadm/<api>/defaults.go):
// registry.k8s.io from 1.22.17, 1.23.15, 1.24.9 and 1.25.0 (the patch
// releases that back-ported the registry move; read at v1.22.16/v1.22.17,
// v1.23.14/v1.23.15, v1.24.8/v1.24.9, v1.25.0), k8s.gcr.io before. A
// pre-release of one of those patches (v1.24.9-rc.0) was tagged before the
// back-port, so it still has k8s.gcr.io, as semver ordering says.
func kubeadmDefaultRepository(v version) string {
	switch v.minor {
	case 22:
		if !v.before(1, 22, 17) {
			return registryK8s
		}
	case 23:
		if !v.before(1, 23, 15) {
			return registryK8s
		}
	case 24:
		if !v.before(1, 24, 9) {
			return registryK8s
		}
	default:
		if v.minor >= 25 {
			return registryK8s
		}
	}
	return registryGCR
}

// KubeadmPauseImage returns the pause image kubeadm kubeadmVersion pre-pulls
// and expects the runtime to use: imageRepository + "/pause:" + the
// PauseVersion compiled into that kubeadm, the string
// `kubeadm config images list` prints. An empty imageRepository means
// kubeadm's default for that version (k8s.gcr.io before 1.22.17, 1.23.15,
// 1.24.9 and 1.25; registry.k8s.io from them on).
//
// Versions are accepted with or without a leading "v", with or without a
// patch level (a missing patch means .0) and with a pre-release
// ("v1.31.0-rc.1" uses the 1.31 row; the alpha.0 tags of 1.25, 1.26 and 1.34
// still had their previous release's constants). Versions outside 1.11–1.37, and
// malformed ones, return an error wrapping [ErrUnknownVersion].
//
// For example, KubeadmPauseImage("v1.31.2", "") returns
// "registry.k8s.io/pause:3.10".
func KubeadmPauseImage(kubeadmVersion, imageRepository string) (string, error) {
	v, err := parseVersion(kubeadmVersion)
	if err != nil {
		return "", fmt.Errorf("resolve: kubeadm version: %w", err)
	}
	pause, repo := "", kubeadmDefaultRepository(v)
	if v.major == 1 {
		for _, r := range kubeadmReleases {
			if r.first <= v.minor && v.minor <= r.last {
				pause = r.pause
				break
			}
		}
	}
	if pause == "" {
		return "", fmt.Errorf("resolve: kubeadm version %q: %w: no pause version known for it (newest known: 1.%d)",
			kubeadmVersion, ErrUnknownVersion, kubeadmReleases[len(kubeadmReleases)-1].last)
	}
	if pre, ok := kubeadmPreReleases[v.String()]; ok {
		pause, repo = pre.pause, pre.repo
	}
	if r := strings.TrimSuffix(strings.TrimSpace(imageRepository), "/"); r != "" {
		repo = r
	}
	return repo + "/pause:" + pause, nil
}

// kubeadmSees says what kubeadm's pre-flight makes of a sandbox image that
// differs from its own, on this node's runtime. kubeadm reads the runtime's
// image only from CRI Status Info["config"].sandboxImage and compares strings
// (cmd/kubeadm/app/util/runtime/runtime.go SandboxImage and
// cmd/kubeadm/app/preflight/checks.go ImagePullCheck.Check, v1.37.2): it
// warns when the runtime reports one; containerd 2.x reports none (seen here
// on 2.2.9 and 2.4.2), so kubeadm says nothing.
func (r *resolver) kubeadmSees() string {
	const warns, blind = "kubeadm's pre-flight warns", "kubeadm's pre-flight cannot see it (containerd 2.x reports no sandbox image over CRI)"
	if r.live != nil && r.live.Runtime == r.runtime {
		if r.live.SandboxImageReported {
			return warns
		}
		if r.runtime == runtimeContainerd {
			return blind
		}
	}
	if r.runtime == runtimeContainerd {
		if v, err := parseVersion(r.runtimeVer); err == nil && v.major >= 2 {
			return blind
		}
		if r.ctr != nil && r.ctr.Version >= 3 {
			return blind // config version 3 and up are read by containerd 2.x only
		}
		if r.runtimeVer == "" {
			return "kubeadm's pre-flight warns only if the runtime reports its sandbox image (containerd 1.x does, 2.x does not)"
		}
	}
	return warns
}
