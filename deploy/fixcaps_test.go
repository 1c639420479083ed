package deploy

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
)

// capsNode is a node tree whose containerd config fix rewrites (the
// examples' alias node), and what its runtime stores.
const (
	capsNode   = "../examples/testdata/node"
	capsImages = "../cmd/sandboxpin/testdata/offline/images.json"
	capsConfig = "etc/containerd/config.toml"
)

// TestFixCapabilities runs `sandboxpin fix --write` as uid 0 with only
// some capabilities (setpriv's bounding set: what a container's
// capabilities add and drop set), on files and directories owned in
// different ways, and checks which runs write: the capabilities the fixer's
// DaemonSet adds are those that keep the owner of a file root does not own,
// and none is needed for root's own files. It needs root and setpriv.
func TestFixCapabilities(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root: it runs fix with fewer capabilities than root has")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("needs setpriv (util-linux)")
	}
	var ds appsv1.DaemonSet
	decodeStrict(t, fixDir+"/daemonset.yaml", &ds)
	var manifest []string
	for _, c := range ds.Spec.Template.Spec.Containers[0].SecurityContext.Capabilities.Add {
		manifest = append(manifest, strings.ToLower(string(c)))
	}
	bin := filepath.Join(t.TempDir(), "sandboxpin")
	work, err := filepath.Abs("../go.work")
	require.NoError(t, err)
	build := exec.Command("go", "build", "-o", bin, "./sandboxpin")
	build.Dir = "../cmd"
	// The command from the workspace, also in the floor and newest runs
	// (scripts/modules.sh), whose GOWORK=off and -modfile are this
	// module's.
	build.Env = append(os.Environ(), "GOWORK="+work, "GOFLAGS=")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build:\n%s", out)
	images, err := filepath.Abs(capsImages)
	require.NoError(t, err)

	chown := func(path string, uid, gid int) func(string) error {
		return func(root string) error { return os.Chown(filepath.Join(root, path), uid, gid) }
	}
	chmod := func(path string, mode os.FileMode) func(string) error {
		return func(root string) error { return os.Chmod(filepath.Join(root, path), mode) }
	}
	tests := []struct {
		name    string
		setup   func(root string) error // "" owns everything as root:root
		caps    []string                // the capabilities left
		written bool                    // fix writes the config
	}{
		{name: "root's file, no capability", caps: nil, written: true},
		{name: "root's file 0600, no capability", setup: chmod(capsConfig, 0o600), written: true},
		{name: "another group's file, no capability", setup: chown(capsConfig, 0, 999), written: false},
		{name: "another group's file, CHOWN", setup: chown(capsConfig, 0, 999), caps: []string{"chown"}, written: true},
		{name: "another user's file, CHOWN", setup: chown(capsConfig, 1000, 1000), caps: []string{"chown"}, written: false},
		{name: "another user's file, the manifest's", setup: chown(capsConfig, 1000, 1000), caps: manifest, written: true},
		{name: "another group's file, the manifest's", setup: chown(capsConfig, 0, 999), caps: manifest, written: true},
		// Left out on purpose (DAC_OVERRIDE): nothing is written.
		{name: "a directory root may not write, the manifest's", setup: chmod("etc/containerd", 0o555), caps: manifest, written: false},
		{name: "another user's directory, the manifest's", setup: chown("etc/containerd", 1000, 1000), caps: manifest, written: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			require.NoError(t, os.CopyFS(root, os.DirFS(capsNode)))
			if tt.setup != nil {
				require.NoError(t, tt.setup(root))
			}
			config := filepath.Join(root, capsConfig)
			before, err := os.Stat(config)
			require.NoError(t, err)
			set := "-all"
			for _, c := range tt.caps {
				set += ",+" + c
			}
			cmd := exec.Command(setpriv, "--bounding-set="+set, "--inh-caps="+set, "--ambient-caps="+set,
				bin, "fix", "--write", "--root", root, "--images", images, "--kubelet-version", "v1.35.0", "--runtime-version", "2.2.9")
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err = cmd.Run()
			after, serr := os.Stat(config)
			require.NoError(t, serr)
			data, rerr := os.ReadFile(config)
			require.NoError(t, rerr)
			written := bytes.Contains(data, []byte(`sandbox = "registry.k8s.io/pause:3.10.1"`))
			assert.Equal(t, tt.written, written, "fix --write with %v:\n%s", tt.caps, out.String())
			if tt.written {
				assert.NoError(t, err, out.String())
			} else {
				assert.Error(t, err)
				assert.Contains(t, out.String(), "nothing written", "a refused write leaves the node as it was")
			}
			assert.Equal(t, before.Mode(), after.Mode(), "mode kept")
			assert.Equal(t, before.Sys().(*syscall.Stat_t).Uid, after.Sys().(*syscall.Stat_t).Uid, "owner kept")
			assert.Equal(t, before.Sys().(*syscall.Stat_t).Gid, after.Sys().(*syscall.Stat_t).Gid, "group kept")
		})
	}
}
