//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHostileConfigFiles runs the command on node roots whose files are
// within the byte limits but nest deeply or hold very many tables, keys or
// lines. Each run must end with exit 2 and one line that names the file
// (or exit 0 where the file is merely large), never a Go trace: a stack
// overflow is a fatal error that no recover catches, so it runs as a
// built binary.
func TestHostileConfigFiles(t *testing.T) {
	t.Parallel()
	bin := buildCommand(t)
	const mib = 1 << 20
	deep := func(opening, closing string, n int) string {
		return strings.Repeat(opening, n) + "1" + strings.Repeat(closing, n)
	}
	tables := func(n int) string {
		var b strings.Builder
		b.WriteString("version = 2\n")
		for i := range n {
			b.WriteString("[plugins.t" + strings.Repeat("x", i%3) + strconv.Itoa(i) + "]\n")
		}
		return b.String()
	}
	tests := []struct {
		name     string
		file     string // node path
		content  string
		args     []string // more arguments
		wantCode int
		wantErr  string // in stderr
	}{
		{name: "containerd arrays 2 million deep", file: "etc/containerd/config.toml",
			content: "version = 2\na = " + deep("[", "]", 2*mib-64) + "\n", wantCode: 2, wantErr: "/etc/containerd/config.toml:2: invalid configuration: limit exceeded"},
		{name: "containerd inline tables 500,000 deep", file: "etc/containerd/config.toml",
			content: "version = 2\na = " + deep("{a=", "}", 500_000) + "\n", wantCode: 2, wantErr: "/etc/containerd/config.toml:2"},
		{name: "containerd dotted key of a million parts", file: "etc/containerd/config.toml",
			content: strings.Repeat("a.", mib) + "a = 1\n", wantCode: 2, wantErr: "/etc/containerd/config.toml:1"},
		// go-toml's decoder is quadratic in tables and keys: resolve allows
		// 4096 of them per file (resolve/internal/tomlfile.MaxEntries).
		{name: "containerd 4,000 tables", file: "etc/containerd/config.toml",
			content: tables(4000), wantCode: exitUnknown}, // parsed whole: no sandbox image in it, no version
		{name: "containerd 100,000 tables", file: "etc/containerd/config.toml",
			content: tables(100_000), wantCode: 2, wantErr: "/etc/containerd/config.toml:4097: invalid configuration: limit exceeded"},
		{name: "CRI-O drop-in nested 1.5 million deep", file: "etc/crio/crio.conf.d/10-deep.conf",
			content: "[crio.image]\npause_image = 'registry.k8s.io/pause:3.10'\nx = " + deep("[{a=", "}]", 300_000) + "\n", wantCode: 2, wantErr: "/etc/crio/crio.conf.d/10-deep.conf:3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.LessOrEqual(t, len(tt.content), 4*mib, "within the file size limit")
			root := t.TempDir()
			p := filepath.Join(root, filepath.FromSlash(tt.file))
			require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o750))
			require.NoError(t, os.WriteFile(p, []byte(tt.content), 0o600))
			for _, cmd := range []string{"resolve", "prepull", "audit"} {
				args := append([]string{cmd, "--root", root}, tt.args...)
				if cmd == "audit" {
					// No runtime answers: audit fails on the socket, or first on the file.
					args = append(args, "--runtime-endpoint", "unix://"+filepath.Join(root, "none.sock"))
				}
				code, _, stderr := runBinary(t, bin, args...)
				assert.NotRegexp(t, goTrace, stderr, "%s printed a Go trace", cmd)
				if cmd == "audit" {
					assert.Equal(t, 2, code, "audit exit code; stderr: %.500s", stderr)
					continue
				}
				assert.Equal(t, tt.wantCode, code, "%s exit code; stderr: %.500s", cmd, stderr)
				if tt.wantErr != "" {
					assert.Contains(t, stderr, tt.wantErr, cmd)
					assert.Equal(t, 1, strings.Count(strings.TrimSpace(stderr), "\n")+1, "%s: one line of error: %.500s", cmd, stderr)
				}
			}
		})
	}
}
