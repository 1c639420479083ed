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
