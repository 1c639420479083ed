package config

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/resolve/internal/nodefs"
	"github.com/sandboxpin/sandboxpin/resolve/internal/nodetest"
)

// lineLimitTests are unit and environment files at and past the limits of
// the line parsers.
var lineLimitTests = []struct {
	name     string
	files    map[string]string // node files
	wantPath string            // file of the nodefs.ErrLimit, "" for no limit error
	wantLine int               // its line
}{
	{
		name:  "words at the limit",
		files: map[string]string{unitLib: "[Service]\nExecStart=/x" + strings.Repeat(" a", maxCommandWords-1) + "\n"},
	},
	{
		name:     "too many words",
		files:    map[string]string{unitLib: "[Service]\nExecStart=/x" + strings.Repeat(" a", maxCommandWords) + "\n"},
		wantPath: "/" + unitLib, wantLine: 2,
	},
	{
		// The line of the first word past the limit: 10 words a line.
		name:     "too many words over continuation lines",
		files:    map[string]string{unitLib: "[Service]\nExecStart=/x \\\n" + strings.Repeat(strings.Repeat(" a", 10)+" \\\n", maxCommandWords/10+1) + "\n"},
		wantPath: "/" + unitLib, wantLine: 3 + maxCommandWords/10,
	},
	{
		name:     "too many words before a quote that never closes",
		files:    map[string]string{unitLib: "[Service]\nExecStart=/x" + strings.Repeat(" a", maxCommandWords) + " \"b\n"},
		wantPath: "/" + unitLib, wantLine: 2,
	},
	{
		name:  "ExecStart lines at the limit",
		files: map[string]string{unitLib: "[Service]\n" + strings.Repeat("ExecStart=/x\n", maxExecStarts)},
	},
	{
		name:     "too many ExecStart lines",
		files:    map[string]string{unitLib: "[Service]\n" + strings.Repeat("ExecStart=/x\n", maxExecStarts+1)},
		wantPath: "/" + unitLib, wantLine: maxExecStarts + 2,
	},
	{
		name: "too many ExecStart lines over drop-ins",
		files: map[string]string{
			unitLib: "[Service]\n" + strings.Repeat("ExecStart=\nExecStart=/x\n", maxExecStarts/4),
			"etc/systemd/system/cri-docker.service.d/a.conf": "[Service]\n" + strings.Repeat("ExecStart=\nExecStart=/x\n", maxExecStarts/4),
			"etc/systemd/system/cri-docker.service.d/b.conf": "[Service]\nExecStart=/x\n",
		},
		wantPath: "/etc/systemd/system/cri-docker.service.d/b.conf", wantLine: 2,
	},
	{
		name:  "flags at the limit",
		files: map[string]string{kubeletFlagsEnv: kubeletKubeadmArgs + "=\"" + strings.Repeat("--a ", maxCommandWords) + "\"\n"},
	},
	{
		name:     "too many flags",
		files:    map[string]string{kubeletFlagsEnv: "# flags\n" + kubeletKubeadmArgs + "=\"" + strings.Repeat("--a ", maxCommandWords+1) + "\"\n"},
		wantPath: "/" + kubeletFlagsEnv, wantLine: 2,
	},
	{
		name:     "too many extra flags",
		files:    map[string]string{"etc/default/kubelet": kubeletExtraArgs + "=" + strings.Repeat("--a\\\n ", maxCommandWords+1) + "\n"},
		wantPath: "/etc/default/kubelet", wantLine: 1,
	},
	{
		name:  "variables at the limit",
		files: map[string]string{kubeletFlagsEnv: envVars(maxEnvVariables) + envVars(maxEnvVariables)},
	},
	{
		name:     "too many variables",
		files:    map[string]string{kubeletFlagsEnv: envVars(maxEnvVariables + 1)},
		wantPath: "/" + kubeletFlagsEnv, wantLine: maxEnvVariables + 1,
	},
}

// envVars is an environment file that sets n variables.
func envVars(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "V%d=%d\n", i, i)
	}
	return b.String()
}

func TestLineLimits(t *testing.T) {
	t.Parallel()
	for _, tt := range lineLimitTests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fsys := nodetest.MapFS(tt.files)
			var err error
			if _, ok := tt.files[unitLib]; ok {
				_, err = ReadCRIDockerd(fsys)
			} else {
				_, err = ReadKubelet(fsys)
			}
			if tt.wantPath == "" {
				assert.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, nodefs.ErrLimit)
			assert.ErrorIs(t, err, nodefs.ErrInvalidConfig)
			var ce *nodefs.ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, tt.wantPath, ce.Path)
			assert.Equal(t, tt.wantLine, ce.Line, "line of %v", err)
		})
	}
}

// TestLineParsersLinear checks that reading 10 times the input allocates at
// most 12 times as often. It is not parallel: AllocsPerRun refuses that.
func TestLineParsersLinear(t *testing.T) {
	tests := []struct {
		name  string
		path  string             // file written
		shape func(n int) string // a file of about n units
		n     int                // units of the small input
	}{
		{
			name: "unit lines", path: unitLib, n: 1000,
			shape: func(n int) string { return "[Service]\n" + strings.Repeat("Environment=A=1\n", n) + "ExecStart=/x\n" },
		},
		{
			name: "unit words", path: unitLib, n: 300,
			shape: func(n int) string { return "[Service]\nExecStart=/x" + strings.Repeat(" --a=b", n) + "\n" },
		},
		{
			name: "unit continuations", path: unitLib, n: 1000,
			shape: func(n int) string {
				return "[Service]\nExecStart=/x \\\n" + strings.Repeat("# c\n  \\\n", n) + " --a\n"
			},
		},
		{
			name: "env assignments", path: kubeletFlagsEnv, n: 1000,
			shape: func(n int) string { return strings.Repeat(kubeletKubeadmArgs+"='--a=b'\n", n) },
		},
		{
			name: "env flags", path: kubeletFlagsEnv, n: 300,
			shape: func(n int) string { return kubeletKubeadmArgs + "=\"" + strings.Repeat("--a=b ", n) + "\"\n" },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			read := func(content string) func() {
				fsys := nodetest.MapFS(map[string]string{tt.path: content})
				if tt.path == unitLib {
					return func() { _, _ = ReadCRIDockerd(fsys) }
				}
				return func() { _, _ = ReadKubelet(fsys) }
			}
			a1 := testing.AllocsPerRun(3, read(tt.shape(tt.n)))
			a10 := testing.AllocsPerRun(3, read(tt.shape(10*tt.n)))
			assert.LessOrEqual(t, a10, 12*a1, "allocations for %d units: %.0f, for %d: %.0f", tt.n, a1, 10*tt.n, a10)
		})
	}
}
