package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"

	"github.com/sandboxpin/sandboxpin/resolve/internal/nodefs"
	"github.com/sandboxpin/sandboxpin/resolve/internal/yamlfile"
)

// Kubeadm is what a kubeadm config file's ClusterConfiguration says.
type Kubeadm struct {
	Path              string
	APIVersion        string
	ImageRepository   *Found // nil when not set
	KubernetesVersion *Found // nil when not set
	CRISocket         *Found // nodeRegistration.criSocket of an Init/JoinConfiguration
	// KubeletSandboxArgs are every --pod-infra-container-image in the
	// nodeRegistration.kubeletExtraArgs of an Init/JoinConfiguration, in
	// the file's order (an InitConfiguration's and a JoinConfiguration's,
	// each item of a v1beta4 list that names it): kubeadm writes those
	// flags into kubeadm-flags.env at init, join and upgrade.
	KubeletSandboxArgs []Found
}

// kubeadmDoc holds the fields read from each YAML document.
type kubeadmDoc struct {
	APIVersion        string `json:"apiVersion"`
	Kind              string `json:"kind"`
	ImageRepository   string `json:"imageRepository"`
	KubernetesVersion string `json:"kubernetesVersion"`
	NodeRegistration  struct {
		CRISocket        string          `json:"criSocket"`
		KubeletExtraArgs json.RawMessage `json:"kubeletExtraArgs"`
	} `json:"nodeRegistration"`
}

// ReadKubeadm reads a kubeadm config file: one or more YAML documents
// separated by "---" lines; the ClusterConfiguration (kubeadm.k8s.io,
// v1beta3 or v1beta4) gives imageRepository and kubernetesVersion, an
// InitConfiguration or JoinConfiguration nodeRegistration.criSocket. Other
// documents (KubeletConfiguration, KubeProxyConfiguration) are skipped.
// Unlike the node's own files, a missing file is an error: the caller named
// it.
func ReadKubeadm(fsys fs.FS, name string) (*Kubeadm, error) {
	b, err := nodefs.ReadFile(fsys, name)
	if err != nil {
		return nil, err
	}
	if b == nil {
		return nil, fmt.Errorf("resolve: kubeadm config %s: %w", nodefs.NodePath(name), fs.ErrNotExist)
	}
	return parseKubeadm(nodefs.NodePath(name), b)
}

// extraArg is one value of a flag in kubeletExtraArgs: item is its index
// in a v1beta4 list, -1 in a v1beta3 map.
type extraArg struct {
	value string
	item  int
}

// extraArgs returns the values of flag in kubeletExtraArgs, raw as
// JSON: a map of flag names to values in v1beta3, a list of {name, value}
// in v1beta4 (cmd/kubeadm/app/apis/kubeadm/v1beta3/types.go and
// v1beta4/types.go NodeRegistrationOptions.KubeletExtraArgs @v1.37.2),
// where an item may name it more than once (the last wins).
func extraArgs(apiVersion string, raw json.RawMessage, flag string) ([]extraArg, error) {
	if apiVersion == "kubeadm.k8s.io/v1beta3" {
		var m map[string]string
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("%s wants a map of flag names to values", apiVersion)
		}
		if v, ok := m[flag]; ok {
			return []extraArg{{value: v, item: -1}}, nil
		}
		return nil, nil
	}
	var args []struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	}
	if err := json.Unmarshal(raw, &args); err != nil {
		return nil, fmt.Errorf("%s wants a list of {name, value}", apiVersion)
	}
	var out []extraArg
	for i, a := range args {
		if a.Name == flag {
			out = append(out, extraArg{value: a.Value, item: i})
		}
	}
	return out, nil
}

// parseKubeadm reads the kubeadm config b, the file at node path path.
func parseKubeadm(path string, b []byte) (*Kubeadm, error) {
	cfg := &Kubeadm{Path: path}
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
		case !errors.Is(err, nodefs.ErrLimit) && bytes.IndexByte(text, '*') < 0:
			// go-yaml v3 refuses a few documents that v2 reads ("&0,"). With
			// no alias ('*') v2 expands nothing and takes linear time: its
			// verdict below decides, and keys get the document's first line.
			docs = nil
		case errors.As(err, &e):
			return nodefs.Invalid(path, "", e.Line, e.Err)
		default:
			return nodefs.Invalid(path, "", start+1, err)
		}
		// The values, and the verdict, are those of sigs.k8s.io/yaml, which
		// kubeadm decodes its config with.
		var d kubeadmDoc
		if err := yaml.Unmarshal(text, &d); err != nil {
			return nodefs.Invalid(path, "", yamlfile.Line(text, start+1, yamlfile.ErrorLine(err)), err)
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
				return nodefs.Invalid(path, "kind", keyLine("kind"), errors.New("more than one ClusterConfiguration"))
			}
			sawCluster = true
			cfg.APIVersion = d.APIVersion
			if d.ImageRepository != "" {
				cfg.ImageRepository = &Found{Value: d.ImageRepository, Path: path, Line: keyLine("imageRepository"), Key: "imageRepository"}
			}
			if d.KubernetesVersion != "" {
				cfg.KubernetesVersion = &Found{Value: d.KubernetesVersion, Path: path, Line: keyLine("kubernetesVersion"), Key: "kubernetesVersion"}
			}
		case "InitConfiguration", "JoinConfiguration":
			if s := d.NodeRegistration.CRISocket; s != "" {
				cfg.CRISocket = &Found{Value: s, Path: path, Line: keyLine("nodeRegistration", "criSocket"), Key: "nodeRegistration.criSocket"}
			}
			if raw := d.NodeRegistration.KubeletExtraArgs; len(raw) > 0 && string(raw) != "null" {
				const key = "nodeRegistration.kubeletExtraArgs"
				args, err := extraArgs(d.APIVersion, raw, KubeletSandboxFlag)
				if err != nil {
					return nodefs.Invalid(path, key, keyLine("nodeRegistration", "kubeletExtraArgs"), err)
				}
				for _, a := range args {
					line := keyLine("nodeRegistration", "kubeletExtraArgs", KubeletSandboxFlag)
					if a.item >= 0 { // v1beta4: the list's item
						line = keyLine("nodeRegistration", "kubeletExtraArgs")
						if n := yamlfile.Key(yamlfile.Key(root, "nodeRegistration"), "kubeletExtraArgs"); n != nil && a.item < len(n.Content) {
							line = yamlfile.Line(text, start+1, n.Content[a.item].Line)
						}
					}
					cfg.KubeletSandboxArgs = append(cfg.KubeletSandboxArgs, Found{Value: a.value, Path: path, Line: line, Key: key, Flag: "--" + KubeletSandboxFlag})
				}
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
