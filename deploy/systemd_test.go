package deploy

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/internal/unitread"
)

const (
	shimUnit    = "systemd/sandboxpin-shim.service"
	kubeletDrop = "systemd/kubelet-sandboxpin-shim.conf"
	// shimBinary is where the unit expects the binary.
	shimBinary = "/usr/local/bin/sandboxpin"
	shimSocket = "unix:///run/sandboxpin/shim.sock"
)

// readUnit parses a unit file of deploy/.
func readUnit(t *testing.T, path string) unitread.Unit {
	t.Helper()
	u, err := unitread.Read(path)
	require.NoError(t, err, "%s", path)
	return u
}

// flagValue returns the value after --name in words.
func flagValue(words []string, name string) (string, bool) {
	i := slices.Index(words, "--"+name)
	if i < 0 || i+1 >= len(words) {
		return "", false
	}
	return words[i+1], true
}

// TestShimUnit checks what the unit and the drop-in promise: the shim runs
// `sandboxpin shim` after the runtimes and before the kubelet, restarts on
// failure, makes its socket 0660 until it copies the runtime's, and the
// kubelet talks to its --listen socket.
func TestShimUnit(t *testing.T) {
	t.Parallel()
	u := readUnit(t, shimUnit)
	words, err := unitread.Words(u.Get("Service", "ExecStart"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(words), 2)
	assert.Equal(t, []string{shimBinary, "shim"}, words[:2])
	listen, ok := flagValue(words, "listen")
	assert.True(t, ok, "--listen")
	assert.Equal(t, shimSocket, listen)
	for _, f := range []string{"runtime-endpoint", "root", "metrics-listen"} {
		_, ok := flagValue(words, f)
		assert.True(t, ok, "ExecStart has --%s: the kubelet test replaces its value", f)
	}
	after := strings.Fields(strings.Join(u.All("Unit", "After"), " "))
	for _, rt := range []string{"containerd.service", "crio.service", "cri-docker.service"} {
		assert.Contains(t, after, rt, "ordered after the runtime")
	}
	assert.Contains(t, strings.Fields(u.Get("Unit", "Before")), "kubelet.service")
	assert.Equal(t, "on-failure", u.Get("Service", "Restart"))
	assert.Equal(t, "0117", u.Get("Service", "UMask"), "a socket 0660, as containerd's and CRI-O's")
	assert.Equal(t, "sandboxpin", u.Get("Service", "RuntimeDirectory"), "/run/sandboxpin holds --listen")
	assert.Equal(t, "/bin/kill -HUP $MAINPID", u.Get("Service", "ExecReload"))

	d := readUnit(t, kubeletDrop)
	env := d.Get("Service", "Environment")
	assert.Equal(t, `"KUBELET_EXTRA_ARGS=--container-runtime-endpoint=`+listen+`"`, env, "the kubelet talks to the shim's socket")
	assert.Contains(t, strings.Fields(d.Get("Unit", "After")), "sandboxpin-shim.service")
	assert.Contains(t, strings.Fields(d.Get("Unit", "Wants")), "sandboxpin-shim.service")
}

// TestShimUnitVerify runs `systemd-analyze verify` (Debian's systemd
// package has it; no running systemd is needed) on the unit and on a
// kubelet unit with the drop-in, as installed: any warning fails. The
// binary path is replaced by an executable stand-in, since verify checks
// that the command exists.
func TestShimUnitVerify(t *testing.T) {
	t.Parallel()
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("no systemd-analyze (Debian: apt-get install systemd)")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "sandboxpin")
	require.NoError(t, os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755)) //nolint:gosec // G306: an executable stand-in
	unit, err := os.ReadFile(shimUnit)
	require.NoError(t, err)
	exec1 := []byte("\nExecStart=" + shimBinary + " ")
	require.Equal(t, 1, bytes.Count(unit, exec1), "one ExecStart, of the binary")
	unit = bytes.ReplaceAll(unit, exec1, []byte("\nExecStart="+bin+" "))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sandboxpin-shim.service"), unit, 0o600)) //nolint:gosec // G703: the test's own temporary directory
	// kubeadm's kubelet unit, as the Kubernetes packages install it, with
	// a stand-in command.
	kubelet := "[Unit]\nDescription=kubelet\nWants=network-online.target\nAfter=network-online.target\n\n" +
		"[Service]\nExecStart=" + bin + " $KUBELET_EXTRA_ARGS\nRestart=always\n\n[Install]\nWantedBy=multi-user.target\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "kubelet.service"), []byte(kubelet), 0o600))
	drop, err := os.ReadFile(kubeletDrop)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "kubelet.service.d"), 0o750))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "kubelet.service.d", "20-sandboxpin-shim.conf"), drop, 0o600)) //nolint:gosec // G703: the test's own temporary directory

	for _, name := range []string{"sandboxpin-shim.service", "kubelet.service"} {
		cmd := exec.Command(analyze, "verify", filepath.Join(dir, name))
		// The directory first, then the default search path (the trailing
		// colon): the drop-in is found beside kubelet.service.
		cmd.Env = append(os.Environ(), "SYSTEMD_UNIT_PATH="+dir+":", "SYSTEMD_LOG_COLOR=0")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "systemd-analyze verify %s:\n%s", name, out)
		assert.Empty(t, string(out), "systemd-analyze verify %s: no warnings", name)
	}
}
