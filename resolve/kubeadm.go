package resolve

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"

	"github.com/sandboxpin/sandboxpin/resolve/internal/yamlfile"
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
	start := 0    // index of the first line of the current document
	startOff := 0 // byte offset of lines[start]
	off := 0      // byte offset of the line being looked at
	sawCluster := false
	var file yamlfile.File // the limits, over the whole file
	flush := func() error {
		text := b[startOff:off]
		if len(bytes.TrimSpace(text)) == 0 {
			return nil
		}
		// Bound what the YAML library will do before it decodes values:
		// the node trees expand no alias.
		docs, _, err := file.Parse(text, start+1)
		switch e := (*yamlfile.Error)(nil); {
		case err == nil:
		case !errors.Is(err, ErrLimit) && bytes.IndexByte(text, '*') < 0:
			// go-yaml v3 refuses a few documents that v2 reads ("&0,"). With
			// no alias ('*') v2 expands nothing and takes linear time: its
			// verdict below decides, and keys get the document's first line.
			docs = nil
		case errors.As(err, &e):
			return configErr(path, "", e.Line, e.Err)
		default:
			return configErr(path, "", start+1, err)
		}
		// The values, and the verdict, are those of sigs.k8s.io/yaml, which
		// kubeadm decodes its config with.
		var d kubeadmDoc
		if err := yaml.Unmarshal(text, &d); err != nil {
			return configErr(path, "", yamlfile.Line(text, start+1, yamlfile.ErrorLine(err)), err)
		}
		if !strings.HasPrefix(d.APIVersion, "kubeadm.k8s.io/") {
			return nil
		}
		var root *yamlv3.Node
		if len(docs) > 0 && len(docs[0].Content) > 0 {
			root = docs[0].Content[0]
		}
		keyLine := func(keys ...string) int {
			n := root
			for _, k := range keys {
				n = yamlfile.Key(n, k)
			}
			if n == nil {
				return start + 1
			}
			return yamlfile.Line(text, start+1, n.Line)
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
				cfg.CRISocket = &found{Value: s, Path: path, Line: keyLine("nodeRegistration", "criSocket"), Key: "nodeRegistration.criSocket"}
			}
		}
		return nil
	}
	for i, l := range lines {
		if t := strings.TrimRight(l, " \t\r\n"); t == "---" || strings.HasPrefix(t, "--- ") || t == "..." {
			if err := flush(); err != nil {
				return nil, err
			}
			start, startOff = i+1, off+len(l)
		}
		off += len(l)
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// kubeadmRelease is what a range of kubeadm minor releases compiles in: the
// pause tag (constants.PauseVersion in cmd/kubeadm/app/constants of
// kubernetes/kubernetes) that kubeadm pre-pulls and expects the runtime to
// use as its sandbox image.
type kubeadmRelease struct {
	first, last int    // minor versions of Kubernetes 1.x, inclusive
	pause       string // PauseVersion
}

// kubeadmReleases is kubeadm's pause tag per minor release, oldest first.
// Each row names the tags whose files were read (module k8s.io/kubernetes at
// that tag, from the Go module proxy). To add a release, read its
// PauseVersion and either raise the last row's last (same tag) or append a
// row; a minor after the last row is an error, not a guess.
//
// kubeadm 1.11 is not in the table: it lists "pause-<GOARCH>:3.1", a name
// that depends on the architecture kubeadm runs on
// (cmd/kubeadm/app/images/images.go at v1.11.0).
var kubeadmReleases = [...]kubeadmRelease{
	// v1.12.0: cmd/kubeadm/app/images/images.go GetGenericImage(repo, "pause", "3.1");
	// v1.17.0: cmd/kubeadm/app/constants/constants.go PauseVersion = "3.1".
	{first: 12, last: 17, pause: "3.1"},
	// v1.18.0, v1.20.0: cmd/kubeadm/app/constants/constants_unix.go
	// PauseVersion = "3.2" (constants_windows.go: 1.3.0, 1.4.0).
	{first: 18, last: 20, pause: "3.2"},
	// From here on cmd/kubeadm/app/constants/constants.go PauseVersion:
	{first: 21, last: 21, pause: "3.4.1"},  // v1.21.0
	{first: 22, last: 22, pause: "3.5"},    // v1.22.0, v1.22.16, v1.22.17
	{first: 23, last: 23, pause: "3.6"},    // v1.23.0, v1.23.14, v1.23.15
	{first: 24, last: 24, pause: "3.7"},    // v1.24.0, v1.24.9
	{first: 25, last: 25, pause: "3.8"},    // v1.25.0
	{first: 26, last: 30, pause: "3.9"},    // v1.26.0, v1.30.0
	{first: 31, last: 33, pause: "3.10"},   // v1.31.0, v1.33.0
	{first: 34, last: 35, pause: "3.10.1"}, // v1.34.0, v1.35.0
	{first: 36, last: 37, pause: "3.10.2"}, // v1.36.0, v1.36.3, v1.37.0, v1.37.2
}

// kubeadmPreReleases are the pre-release tags of x.y.0 read for the minors
// whose PauseVersion changed during the cycle, keyed by version.String(): the
// bump lands at some point between the alpha.0 tag (cut from the master
// branch) and the release, so such a minor's pre-releases that were not read
// are unknown. Tags the Go module proxy refuses ("not available") could not
// be read: v1.25.0-alpha.1/.2/.3/beta.0, v1.26.0-alpha.2/.3/beta.0,
// v1.34.0-rc.0, v1.36.0-alpha.0/.1, v1.31.0-alpha.0/.1/rc.0 and the alpha.0
// of 1.18, 1.21 to 1.24.
var kubeadmPreReleases = map[string]struct{ pause, repo string }{
	// constants.go PauseVersion = "3.7"; apis/kubeadm/v1beta3/defaults.go
	// DefaultImageRepository = "k8s.gcr.io".
	"1.25.0-alpha.0": {pause: "3.7", repo: registryGCR},
	// PauseVersion = "3.8"; DefaultImageRepository = "registry.k8s.io".
	"1.25.0-rc.0": {pause: "3.8", repo: registryK8s},
	// PauseVersion = "3.8" (1.26.0 has 3.9).
	"1.26.0-alpha.0": {pause: "3.8", repo: registryK8s},
	"1.26.0-alpha.1": {pause: "3.8", repo: registryK8s},
	// PauseVersion = "3.10" until beta.0 (1.34.0 has 3.10.1).
	"1.34.0-alpha.0": {pause: "3.10", repo: registryK8s},
	"1.34.0-alpha.1": {pause: "3.10", repo: registryK8s},
	"1.34.0-alpha.2": {pause: "3.10", repo: registryK8s},
	"1.34.0-alpha.3": {pause: "3.10", repo: registryK8s},
	"1.34.0-beta.0":  {pause: "3.10", repo: registryK8s},
	// PauseVersion = "3.10.2", as 1.36.0.
	"1.36.0-rc.0": {pause: "3.10.2", repo: registryK8s},
}

// kubeadmDefaultRepository returns kubeadm's default imageRepository
// (DefaultImageRepository in cmd/kubeadm/app/apis/kubeadm/<api>/defaults.go):
// registry.k8s.io from 1.22.17, 1.23.15, 1.24.9 and 1.25 (the patch
// releases that back-ported the registry move; read at v1.22.16/v1.22.17,
// v1.23.14/v1.23.15, v1.24.0/v1.24.9, v1.25.0-rc.0, v1.25.0; v1.24.8 and the
// patch pre-releases could not be downloaded), k8s.gcr.io before. A
// pre-release of one of those patches (v1.24.9-rc.0) is taken to predate the
// back-port, as semver ordering says (not read).
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
// patch level (a missing patch means .0) and with a pre-release. A
// pre-release of x.y.0 has its minor's pause tag when the previous minor had
// the same one (v1.37.0-rc.0: 3.10.2); in a minor whose tag changed during
// the cycle only the pre-releases that were read are known (v1.34.0-beta.0
// still had 3.10, v1.34.0 has 3.10.1), the others are an error. Versions
// outside 1.12–1.37 (kubeadm 1.11 named its pause image per architecture,
// "pause-amd64:3.1"), and malformed ones, return an error wrapping
// [ErrUnknownVersion].
//
// For example, KubeadmPauseImage("v1.31.2", "") returns
// "registry.k8s.io/pause:3.10".
func KubeadmPauseImage(kubeadmVersion, imageRepository string) (string, error) {
	v, err := parseVersion(kubeadmVersion)
	if err != nil {
		return "", fmt.Errorf("resolve: kubeadm version: %w", err)
	}
	pause, repo := "", kubeadmDefaultRepository(v)
	prev := "" // the previous minor's PauseVersion
	if v.major == 1 {
		for i, r := range kubeadmReleases {
			if r.first <= v.minor && v.minor <= r.last {
				pause = r.pause
				switch {
				case v.minor > r.first:
					prev = r.pause
				case i > 0:
					prev = kubeadmReleases[i-1].pause
				}
				break
			}
		}
	}
	if pause == "" && v.major == 1 && v.minor == 11 {
		return "", fmt.Errorf("resolve: kubeadm version %q: %w: kubeadm 1.11 pulls pause-<architecture>:3.1, a name that depends on the node",
			kubeadmVersion, ErrUnknownVersion)
	}
	if pause == "" {
		return "", fmt.Errorf("resolve: kubeadm version %q: %w: no pause version known for it (newest known: 1.%d)",
			kubeadmVersion, ErrUnknownVersion, kubeadmReleases[len(kubeadmReleases)-1].last)
	}
	if v.pre != "" && v.patch == 0 {
		// A pre-release of x.y.0, tagged on the master branch during the
		// cycle; a pre-release of a patch (1.24.9-rc.0) is cut from the
		// release branch and has its minor's PauseVersion.
		if pre, ok := kubeadmPreReleases[v.String()]; ok {
			pause, repo = pre.pause, pre.repo
		} else if prev != pause {
			return "", fmt.Errorf("resolve: kubeadm version %q: %w: PauseVersion changed from %s to %s during the 1.%d cycle "+
				"and this pre-release was not read", kubeadmVersion, ErrUnknownVersion, prev, pause, v.minor)
		}
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
