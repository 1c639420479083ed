package config

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"strings"
	"unicode"

	"github.com/sandboxpin/sandboxpin/criinfo"
	"github.com/sandboxpin/sandboxpin/resolve/internal/nodefs"
	"github.com/sandboxpin/sandboxpin/resolve/internal/unitfile"
)

// The kubelet's flag file and variables, and the flags read from them.
const (
	kubeletFlagsEnv     = "var/lib/kubelet/kubeadm-flags.env"
	kubeletKubeadmArgs  = "KUBELET_KUBEADM_ARGS"
	kubeletExtraArgs    = "KUBELET_EXTRA_ARGS"
	KubeletSandboxFlag  = "pod-infra-container-image"
	KubeletEndpointFlag = "container-runtime-endpoint"
)

// kubeletUnit is the kubelet's systemd unit; kubeadm's packages add the
// drop-in kubelet.service.d/10-kubeadm.conf, whose ExecStart ends in
// $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS.
const kubeletUnit = "kubelet.service"

// kubeletEnvFiles lists the EnvironmentFiles of the kubelet's unit, in the
// order systemd reads them (a later file's variable overrides an earlier
// one's): kubeadm's drop-in reads kubeadm-flags.env and then its package's
// file; each is read when it exists, whatever the unit names.
func kubeletEnvFiles() []string {
	return []string{
		kubeletFlagsEnv,         // KUBELET_KUBEADM_ARGS
		"etc/default/kubelet",   // KUBELET_EXTRA_ARGS on Debian, Ubuntu
		"etc/sysconfig/kubelet", // KUBELET_EXTRA_ARGS on RHEL, Fedora, SUSE
	}
}

// Kubelet is what the kubelet's systemd unit, its drop-ins and its flag
// files say.
type Kubelet struct {
	Files       []string
	SandboxArgs []Found // every --pod-infra-container-image on the command line, in order; the last wins
	Endpoint    *Found  // the last --container-runtime-endpoint
}

// ReadKubelet reads the kubelet's command line as systemd builds it: the
// Environment= lines of kubelet.service and its drop-ins (see unitFiles),
// then the flag files of kubeletEnvFiles, whose settings override those
// (systemd.exec(5), EnvironmentFile=), expanded into the unit's last
// ExecStart (a literal flag in it counts where it stands). Without a unit
// file, the command line is kubeadm's drop-in's: $KUBELET_KUBEADM_ARGS
// $KUBELET_EXTRA_ARGS. It returns nil, nil when no file exists.
func ReadKubelet(fsys fs.FS) (*Kubelet, error) {
	cfg := &Kubelet{}
	vars := map[string]Found{}
	units, err := unitFiles(fsys, kubeletUnit)
	if err != nil {
		return nil, err
	}
	var execs []execStart
	seen := 0
	for _, name := range units {
		b, err := nodefs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		if b == nil {
			continue
		}
		p := nodefs.NodePath(name)
		cfg.Files = append(cfg.Files, p)
		if execs, err = parseExecStarts(p, b, execs, &seen); err != nil {
			return nil, err
		}
		if err := parseEnvironment(p, b, vars); err != nil {
			return nil, err
		}
	}
	for _, name := range kubeletEnvFiles() {
		b, err := nodefs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		if b == nil {
			continue
		}
		cfg.Files = append(cfg.Files, nodefs.NodePath(name))
		fileVars, err := parseEnvFile(nodefs.NodePath(name), b)
		if err != nil {
			return nil, err
		}
		maps.Copy(vars, fileVars)
	}
	if len(cfg.Files) == 0 {
		return nil, nil
	}
	cmd := []unitfile.Word{{Text: "$" + kubeletKubeadmArgs}, {Text: "$" + kubeletExtraArgs}}
	var exec *execStart
	if len(execs) > 0 {
		exec = &execs[len(execs)-1]
		cmd = exec.args
	}
	for i := 0; i < len(cmd); i++ {
		if name, ok := varRef(cmd[i].Text); ok {
			v, ok := vars[name]
			if !ok {
				continue
			}
			if err := cfg.readArgs(v, name); err != nil {
				return nil, err
			}
			continue
		}
		// A literal flag in ExecStart.
		if exec == nil {
			continue
		}
		for _, flag := range []string{KubeletSandboxFlag, KubeletEndpointFlag} {
			val, at, ok := flagValue(cmd[i:min(i+2, len(cmd))], flag)
			if !ok || at > 1 {
				continue
			}
			f := Found{Value: val, Path: exec.at.Path, Line: exec.e.LineAt(cmd[i+at].Off), Key: "ExecStart", Flag: "--" + flag}
			cfg.set(flag, f)
			i += at
			break
		}
	}
	return cfg, nil
}

// set records f, the value of flag.
func (k *Kubelet) set(flag string, f Found) {
	if flag == KubeletSandboxFlag {
		k.SandboxArgs = append(k.SandboxArgs, f)
	} else {
		k.Endpoint = &f
	}
}

// readArgs reads the flags of the variable name, whose assignment is v.
func (k *Kubelet) readArgs(v Found, name string) error {
	// systemd splits an unquoted $VAR in ExecStart at whitespace only.
	if n := countFields(v.Value); n > maxCommandWords {
		return nodefs.Invalid(v.Path, name, v.Line, errTooManyWords)
	}
	var args []unitfile.Word
	for _, s := range strings.Fields(v.Value) {
		args = append(args, unitfile.Word{Text: s})
	}
	for _, flag := range []string{KubeletSandboxFlag, KubeletEndpointFlag} {
		if s, _, ok := flagValue(args, flag); ok {
			at := v
			at.Value, at.Key, at.Flag = s, name, "--"+flag
			k.set(flag, at)
		}
	}
	return nil
}

// varRef returns NAME for a word "$NAME" or "${NAME}", which systemd
// expands in ExecStart.
func varRef(w string) (string, bool) {
	name, ok := strings.CutPrefix(w, "$")
	if !ok {
		return "", false
	}
	if inner, ok := strings.CutPrefix(name, "{"); ok {
		name, ok = strings.CutSuffix(inner, "}")
		if !ok {
			return "", false
		}
	}
	return name, validEnvName(name)
}

// parseEnvironment applies the Environment= lines of the [Service] section
// of one unit file (or drop-in) to vars: each holds assignments
// "KEY=VALUE", quoted as one word when the value holds spaces; the last
// assignment of a key wins, and an empty Environment= resets nothing (only
// the variables it names change).
func parseEnvironment(path string, b []byte, vars map[string]Found) error {
	for e, err := range unitfile.Entries(b) {
		if err != nil {
			return nodefs.Invalid(path, "", e.Line, err)
		}
		if e.Section != "Service" || e.Key != "Environment" {
			continue
		}
		words, err := unitfile.Split(e.Value, maxCommandWords)
		if err != nil {
			var we *unitfile.WordError
			errors.As(err, &we)
			return nodefs.Invalid(path, "Environment", e.LineAt(we.Off), err)
		}
		for _, w := range words {
			key, val, ok := strings.Cut(w.Text, "=")
			if !ok || !validEnvName(key) {
				continue // systemd ignores an invalid assignment
			}
			if _, ok := vars[key]; !ok && len(vars) == maxEnvVariables {
				return nodefs.Invalid(path, key, e.LineAt(w.Off), fmt.Errorf("%w: more than %d environment variables",
					nodefs.ErrLimit, maxEnvVariables))
			}
			vars[key] = Found{Value: val, Path: path, Line: e.LineAt(w.Off), Key: key}
		}
	}
	return nil
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
// socket names the runtimes use by default; criinfo.RuntimeUnknown when it is
// not recognised.
func RuntimeFromEndpoint(ep string) criinfo.Runtime {
	switch {
	case strings.Contains(ep, "containerd.sock"):
		return criinfo.RuntimeContainerd
	case strings.Contains(ep, "crio.sock"):
		return criinfo.RuntimeCRIO
	case strings.Contains(ep, "cri-dockerd.sock"):
		return criinfo.RuntimeCRIDockerd
	}
	return criinfo.RuntimeUnknown
}
