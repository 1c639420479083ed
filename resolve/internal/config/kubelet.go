package config

import (
	"fmt"
	"io/fs"
	"strings"
	"unicode"

	"github.com/sandboxpin/sandboxpin/criinfo"
	"github.com/sandboxpin/sandboxpin/resolve/internal/nodefs"
	"github.com/sandboxpin/sandboxpin/unitfile"
)

// The kubelet's flag file and variables, and the flags read from them.
const (
	kubeletFlagsEnv     = "var/lib/kubelet/kubeadm-flags.env"
	kubeletKubeadmArgs  = "KUBELET_KUBEADM_ARGS"
	kubeletExtraArgs    = "KUBELET_EXTRA_ARGS"
	KubeletSandboxFlag  = "pod-infra-container-image"
	KubeletEndpointFlag = "container-runtime-endpoint"
)

// kubeletEnvFiles lists the EnvironmentFiles the kubeadm kubelet drop-in
// reads, with the variable that carries flags, in the order the drop-in's
// ExecStart expands them ($KUBELET_KUBEADM_ARGS before $KUBELET_EXTRA_ARGS,
// so a flag in the latter wins).
func kubeletEnvFiles() []struct{ path, variable string } {
	return []struct{ path, variable string }{
		{kubeletFlagsEnv, kubeletKubeadmArgs},
		{"etc/default/kubelet", kubeletExtraArgs},   // Debian, Ubuntu
		{"etc/sysconfig/kubelet", kubeletExtraArgs}, // RHEL, Fedora, SUSE
	}
}

// Kubelet is what the kubelet's flag files say.
type Kubelet struct {
	Files       []string
	SandboxArgs []Found // every --pod-infra-container-image, in effect order; the last wins
	Endpoint    *Found  // the last --container-runtime-endpoint
}

// ReadKubelet reads the kubelet's flag files. It returns nil, nil when none
// exists.
func ReadKubelet(fsys fs.FS) (*Kubelet, error) {
	var cfg *Kubelet
	for _, f := range kubeletEnvFiles() {
		b, err := nodefs.ReadFile(fsys, f.path)
		if err != nil {
			return nil, err
		}
		if b == nil {
			continue
		}
		if cfg == nil {
			cfg = &Kubelet{}
		}
		cfg.Files = append(cfg.Files, nodefs.NodePath(f.path))
		vars, err := parseEnvFile(nodefs.NodePath(f.path), b)
		if err != nil {
			return nil, err
		}
		v, ok := vars[f.variable]
		if !ok {
			continue
		}
		// systemd splits an unquoted $VAR in ExecStart at whitespace only.
		if n := countFields(v.Value); n > maxCommandWords {
			return nil, nodefs.Invalid(v.Path, f.variable, v.Line, errTooManyWords)
		}
		var args []unitfile.Word
		for _, s := range strings.Fields(v.Value) {
			args = append(args, unitfile.Word{Text: s})
		}
		if s, _, ok := flagValue(args, KubeletSandboxFlag); ok {
			at := v
			at.Value, at.Key = s, f.variable+" --"+KubeletSandboxFlag
			cfg.SandboxArgs = append(cfg.SandboxArgs, at)
		}
		if s, _, ok := flagValue(args, KubeletEndpointFlag); ok {
			at := v
			at.Value, at.Key = s, f.variable+" --"+KubeletEndpointFlag
			cfg.Endpoint = &at
		}
	}
	return cfg, nil
}

// parseEnvFile parses a systemd EnvironmentFile: KEY=VALUE lines, # and ;
// comments, a trailing backslash continues a line; in a value, "double
// quotes" take backslash escapes (so Go's %q output, which kubeadm writes,
// reads back), 'single quotes' are literal, and outside quotes a backslash
// escapes the next character. The last assignment of a key wins. Lines that
// are not assignments are skipped, as systemd skips them. The returned Found
// values carry the line of the assignment.
func parseEnvFile(path string, b []byte) (map[string]Found, error) {
	vars := map[string]Found{}
	for ll := range unitfile.Lines(b) {
		t := strings.TrimSpace(ll.Text)
		if t == "" || t[0] == '#' || t[0] == ';' {
			continue
		}
		key, raw, ok := strings.Cut(t, "=")
		key = strings.TrimSpace(key)
		if !ok || !validEnvName(key) {
			continue
		}
		val, err := unquoteEnvValue(strings.TrimSpace(raw))
		if err != nil {
			return nil, nodefs.Invalid(path, key, ll.Number, err)
		}
		if _, ok := vars[key]; !ok && len(vars) == maxEnvVariables {
			return nil, nodefs.Invalid(path, key, ll.Number, fmt.Errorf("%w: more than %d variables in one environment file",
				nodefs.ErrLimit, maxEnvVariables))
		}
		vars[key] = Found{Value: val, Path: path, Line: ll.Number, Key: key}
	}
	return vars, nil
}

// countFields returns len(strings.Fields(s)) without building the list.
func countFields(s string) int {
	n := 0
	in := false
	for _, r := range s {
		space := unicode.IsSpace(r)
		if !space && !in {
			n++
		}
		in = !space
	}
	return n
}

func validEnvName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '_' && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// unquoteEnvValue reads a value as systemd's EnvironmentFile= does: quotes
// group and are removed, whitespace is kept; a backslash escapes the next
// character outside single quotes (\n and \t are newline and tab).
func unquoteEnvValue(s string) (string, error) {
	var sb strings.Builder
	var quote byte
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case quote != 0 && c == quote:
			quote = 0
		case quote == '\'':
			sb.WriteByte(c)
		case c == '\\' && i+1 < len(s):
			i++
			switch s[i] {
			case 'n':
				sb.WriteByte('\n')
			case 't':
				sb.WriteByte('\t')
			default:
				sb.WriteByte(s[i])
			}
		case quote == 0 && (c == '"' || c == '\''):
			quote = c
		default:
			sb.WriteByte(c)
		}
	}
	if quote != 0 {
		return "", fmt.Errorf("unterminated %c quote", quote)
	}
	return sb.String(), nil
}

// RuntimeFromEndpoint names the runtime a CRI endpoint belongs to, from the
// socket names the runtimes use by default; "" when it is not recognised.
func RuntimeFromEndpoint(ep string) string {
	switch {
	case strings.Contains(ep, "containerd.sock"):
		return criinfo.RuntimeContainerd
	case strings.Contains(ep, "crio.sock"):
		return criinfo.RuntimeCRIO
	case strings.Contains(ep, "cri-dockerd.sock"):
		return criinfo.RuntimeCRIDockerd
	}
	return ""
}
