package criotest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/internal/containerdtest"
	"github.com/sandboxpin/sandboxpin/internal/runtimetest"
)

// TestStart starts CRI-O with images stored under several names, checks
// that it lists them, that it keeps everything under its directory, and that
// Reload and Restart apply a new pinned_images.
func TestStart(t *testing.T) {
	t.Parallel()
	host := hostState()
	begin := time.Now()
	c := Start(t, Options{
		PauseImage: "registry.k8s.io/pause:3.10.1",
		Images: []containerdtest.Image{
			{Names: []string{"registry.k8s.io/pause:3.10.1", "k8s.gcr.io/pause:3.10.1"}},
			{Names: []string{"docker.io/library/busybox:1.36"}},
		},
	})
	t.Logf("load and start: %v", time.Since(begin))
	assert.True(t, strings.HasPrefix(c.Dir, "/tmp/"))

	pinned := func() map[string]bool {
		m := map[string]bool{}
		for _, img := range c.Images(t) {
			for _, tag := range img.GetRepoTags() {
				m[tag] = img.GetPinned()
			}
		}
		return m
	}
	assert.Equal(t, map[string]bool{
		"registry.k8s.io/pause:3.10.1":   true,
		"k8s.gcr.io/pause:3.10.1":        true,
		"docker.io/library/busybox:1.36": false,
	}, pinned())

	c.Configure(t, "registry.k8s.io/pause:3.10.1", []string{"*busybox*"})
	begin = time.Now()
	c.Reload(t)
	t.Logf("reload: %v", time.Since(begin))
	assert.True(t, pinned()["docker.io/library/busybox:1.36"], "after SIGHUP")

	c.Configure(t, "registry.k8s.io/pause:3.10.1", nil)
	begin = time.Now()
	c.Restart(t)
	t.Logf("restart: %v", time.Since(begin))
	assert.False(t, pinned()["docker.io/library/busybox:1.36"], "after restart")

	c.LoadByDigest(t, "example.com/bydigest/app", containerdtest.Image{Names: []string{"example.com/x:1"}})
	require.Len(t, c.Images(t), 3)

	// Nothing under the host's CRI-O, containers/image and
	// containers/storage paths changed: the default paths of CRI-O 1.36.3
	// (`crio config`) and skopeo's blob-info cache.
	assert.Equal(t, host, hostState(), "host paths (absent, or their modification times)")
	_, err := os.Stat(filepath.Join(c.StorageRoot, "vfs-images"))
	require.NoError(t, err)
}

// hostPaths are where CRI-O, skopeo and containers/storage write by default.
var hostPaths = []string{
	"/etc/crio", "/etc/crio/auth", "/var/run/crio", "/var/lib/crio", "/var/log/crio",
	"/var/lib/containers", "/var/lib/containers/cache/blob-info-cache-v1.boltdb", "/run/containers",
	"/var/run/nri", "/var/run/cdi",
}

// hostState returns each host path's modification time, or "absent".
func hostState() map[string]string { return runtimetest.HostState(hostPaths) }

// TestRunRefused checks that a configuration CRI-O refuses gives ErrExited,
// not a hang.
func TestRunRefused(t *testing.T) {
	t.Parallel()
	c, err := Run(t, Options{PauseImage: "registry.k8s.io/PAUSE:3.10.1"})
	require.ErrorIs(t, err, ErrExited)
	assert.Contains(t, c.Log(), "PAUSE")
	t.Logf("refused: %s", lastLine(c.Log()))
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
