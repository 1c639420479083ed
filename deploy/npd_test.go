package deploy

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	kjson "sigs.k8s.io/json"

	"github.com/sandboxpin/sandboxpin/internal/containerdtest"
)

// The custom plugin monitor config as node-problem-detector v1.36.0 reads
// it (pkg/custompluginmonitor/types/config.go, types.go and pkg/types's
// Condition): the module is not on the Go module proxy, so these mirror its
// JSON fields. Condition's "status" and "transition" are left out: NPD fills
// them in, and a config has no business setting them.
type npdConfig struct {
	Plugin       string `json:"plugin"`
	PluginConfig struct {
		InvokeInterval    *string `json:"invoke_interval,omitempty"`
		Timeout           *string `json:"timeout,omitempty"`
		MaxOutputLength   *int    `json:"max_output_length,omitempty"`
		Concurrency       *int    `json:"concurrency,omitempty"`
		MessageChange     *bool   `json:"enable_message_change_based_condition_update,omitempty"`
		SkipInitialStatus *bool   `json:"skip_initial_status,omitempty"`
	} `json:"pluginConfig"`
	Source           string         `json:"source"`
	Conditions       []npdCondition `json:"conditions"`
	Rules            []npdRule      `json:"rules"`
	MetricsReporting *bool          `json:"metricsReporting,omitempty"`
}

type npdCondition struct {
	Type    string `json:"type"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

type npdRule struct {
	Type      string   `json:"type"` // "temporary" or "permanent"
	Condition string   `json:"condition"`
	Reason    string   `json:"reason"`
	Path      string   `json:"path"`
	Args      []string `json:"args"`
	Timeout   *string  `json:"timeout"`
}

// NPD's defaults (config.go, v1.36.0) for the fields left out.
const (
	npdDefaultTimeout   = 5 * time.Second
	npdDefaultMaxOutput = 80
)

// npdStatus maps a plugin's exit code as NPD does (plugin.go, v1.36.0):
// 0 OK, 1 NonOK, anything else Unknown. A permanent rule's condition is
// then False, True or Unknown.
func npdStatus(code int) string {
	switch code {
	case 0:
		return "False"
	case 1:
		return "True"
	}
	return "Unknown"
}

const npdConfigPath = "node-problem-detector/sandboxpin-monitor.json"

// loadNPD decodes the config strictly and applies NPD's checks
// (ApplyConfiguration and Validate in config.go, v1.36.0), but for the
// plugin path, which exists in NPD's image, not here.
func loadNPD(t *testing.T) npdConfig {
	t.Helper()
	data, err := os.ReadFile(npdConfigPath)
	require.NoError(t, err)
	var c npdConfig
	require.NoError(t, decodeNPD(data, &c), npdConfigPath)

	require.Equal(t, "custom", c.Plugin)
	global := npdDefaultTimeout
	if c.PluginConfig.Timeout != nil {
		global, err = time.ParseDuration(*c.PluginConfig.Timeout)
		require.NoError(t, err, "pluginConfig.timeout")
	}
	if c.PluginConfig.InvokeInterval != nil {
		_, err = time.ParseDuration(*c.PluginConfig.InvokeInterval)
		require.NoError(t, err, "pluginConfig.invoke_interval")
	}
	for i, r := range c.Rules {
		require.Contains(t, []string{"temporary", "permanent"}, r.Type, "rules[%d].type", i)
		if r.Timeout != nil {
			d, err := time.ParseDuration(*r.Timeout)
			require.NoError(t, err, "rules[%d].timeout", i)
			require.LessOrEqual(t, d, global, "rules[%d].timeout: NPD refuses a rule timeout above the global one", i)
		}
		if r.Type == "permanent" {
			require.True(t, slices.ContainsFunc(c.Conditions, func(d npdCondition) bool { return d.Type == r.Condition }),
				"rules[%d]: a permanent problem needs a default condition %q", i, r.Condition)
		}
	}
	return c
}

func TestNPDConfig(t *testing.T) {
	t.Parallel()
	c := loadNPD(t)
	require.Len(t, c.Rules, 1)
	r := c.Rules[0]
	assert.Equal(t, "permanent", r.Type)
	assert.Equal(t, "SandboxImageUnprotected", r.Condition)
	assert.Equal(t, []string{"audit", "-o", "summary"}, r.Args[:3])
	assert.Equal(t, "/host", argAfter(t, r.Args, "--root"))

	// The patch for NPD's DaemonSet mounts what the rule reads and loads
	// this config.
	var ds appsv1.DaemonSet
	decodeStrict(t, "node-problem-detector/daemonset-patch.yaml", &ds)
	require.Len(t, ds.Spec.Template.Spec.Containers, 1)
	ctr := ds.Spec.Template.Spec.Containers[0]
	assert.Contains(t, ctr.Command, "--config.custom-plugin-monitor=/config/sandboxpin/"+filepath.Base(npdConfigPath))
	// sandboxpin finds the kubelet's socket (the shim's) or containerd's
	// under --root.
	assert.NotContains(t, r.Args, "--runtime-endpoint")
	for _, sock := range []string{"/host/run/sandboxpin/shim.sock", "/host/run/containerd/containerd.sock"} {
		assert.True(t, socketMounted(sock, ctr.VolumeMounts), sock)
	}
	var paths []string
	for _, m := range ctr.VolumeMounts {
		paths = append(paths, m.MountPath)
		assert.True(t, m.ReadOnly, m.Name)
	}
	assert.Contains(t, paths, "/host/etc")
	assert.Contains(t, paths, "/host/var/lib/kubelet")
	assert.Contains(t, paths, "/config/sandboxpin")
}

// decodeNPD decodes the config JSON with no unknown, duplicate or
// differently cased field: stricter than NPD's encoding/json.Unmarshal,
// which would ignore a typo and match keys case-insensitively.
func decodeNPD(data []byte, c *npdConfig) error {
	strict, err := kjson.UnmarshalStrict(data, c, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		return err
	}
	return errors.Join(strict...)
}

// TestNPDConfigRejects makes sure the strict decoding above can fail.
func TestNPDConfigRejects(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(npdConfigPath)
	require.NoError(t, err)
	tests := []struct{ name, from, to string }{
		{name: "misspelt", from: `"max_output_length"`, to: `"max_output_len"`},
		{name: "cased", from: `"invoke_interval"`, to: `"Invoke_Interval"`},
		{name: "duplicate", from: `"source":`, to: `"plugin": "custom", "source":`},
		{name: "trailing", from: "\n}\n", to: "\n}\n{}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			bad := strings.Replace(string(data), tt.from, tt.to, 1)
			require.NotEqual(t, string(data), bad)
			assert.Error(t, decodeNPD([]byte(bad), &npdConfig{}))
		})
	}
}

// argAfter returns the argument after flag.
func argAfter(t *testing.T, args []string, flag string) string {
	t.Helper()
	i := slices.Index(args, flag)
	require.GreaterOrEqual(t, i, 0, "no %s in %q", flag, args)
	require.Less(t, i+1, len(args), "%s has no value", flag)
	return args[i+1]
}

// TestNPDPluginLive runs the config's plugin command, with the node's root
// and socket swapped for a test node's, against live containerd, and maps
// its exit code as NPD does.
func TestNPDPluginLive(t *testing.T) {
	t.Parallel()
	containerdtest.Require(t, containerdtest.V1)
	c := loadNPD(t)
	rule := c.Rules[0]
	maxOutput := npdDefaultMaxOutput
	if c.PluginConfig.MaxOutputLength != nil {
		maxOutput = *c.PluginConfig.MaxOutputLength
	}
	timeout, err := time.ParseDuration(*rule.Timeout)
	require.NoError(t, err)

	bin := filepath.Join(t.TempDir(), filepath.Base(rule.Path))
	build := exec.Command("go", "build", "-o", bin, "./sandboxpin")
	build.Dir = "../cmd"
	out, err := build.CombinedOutput()
	require.NoError(t, err, string(out))

	const stored = "registry.k8s.io/pause:3.10.1"
	tests := []struct {
		name       string
		version    containerdtest.Version // 0: no runtime
		wantStatus string
		wantPrefix string
	}{
		{name: "containerd 1.6 never pins", version: containerdtest.V1, wantStatus: "True", wantPrefix: "FAIL: containerd does not pin sandbox image " + stored},
		{name: "containerd 2.2 pins the exact name", version: containerdtest.V2, wantStatus: "False", wantPrefix: "OK: containerd pins sandbox image " + stored},
		{name: "no runtime", wantStatus: "Unknown", wantPrefix: "UNKNOWN: the audit failed:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			if tt.version != 0 {
				ctd := containerdtest.Start(t, tt.version, containerdtest.Options{
					SandboxImage: stored,
					Images:       []containerdtest.Image{{Names: []string{stored}}},
				})
				// The socket where the node has it (a hard link reaches
				// the same socket); the rule finds it there.
				sock := filepath.Join(root, "run/containerd/containerd.sock")
				require.NoError(t, os.MkdirAll(filepath.Dir(sock), 0o750))
				require.NoError(t, os.Link(ctd.Socket, sock))
			}
			args := slices.Clone(rule.Args)
			args[slices.Index(args, "--root")+1] = root

			cmd := exec.Command(bin, args...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			start := time.Now()
			err := cmd.Run()
			took := time.Since(start)
			code := 0
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				code = exit.ExitCode()
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, tt.wantStatus, npdStatus(code), "exit %d; stdout %q; stderr %q", code, stdout.String(), stderr.String())
			msg := strings.TrimSpace(stdout.String())
			assert.LessOrEqual(t, len(msg), maxOutput, "NPD would cut the message %q", msg)
			assert.True(t, strings.HasPrefix(msg, tt.wantPrefix), "message %q", msg)
			assert.Less(t, took, timeout, "within the rule's timeout")
			t.Logf("exit %d -> %s=%s, message %q (%v)", code, rule.Condition, npdStatus(code), msg, took)
		})
	}
}
