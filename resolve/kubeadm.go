package resolve

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"

	"github.com/sandboxpin/sandboxpin/resolve/internal/releases"
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
// The table, with where each row was read, is in resolve/internal/releases
// (kubeadm.go), listed in docs/release-facts.md. For example,
// KubeadmPauseImage("v1.31.2", "") returns "registry.k8s.io/pause:3.10".
func KubeadmPauseImage(kubeadmVersion, imageRepository string) (string, error) {
	v, err := parseVersion(kubeadmVersion)
	if err != nil {
		return "", fmt.Errorf("resolve: kubeadm version: %w", err)
	}
	img, err := releases.KubeadmPauseImage(kubeadmVersion, v, imageRepository)
	if err != nil {
		return "", fmt.Errorf("resolve: %w", err)
	}
	return img, nil
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
		if v, err := parseVersion(r.runtimeVer); err == nil && v.Major >= 2 {
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
