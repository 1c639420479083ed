package cridockerdtest

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sandboxpin/sandboxpin/internal/containerdtest"
	"github.com/sandboxpin/sandboxpin/internal/runtimetest"
)

// TestStart starts each build in front of Docker Engine with images stored
// under several names, and checks what Docker stores, what cri-dockerd lists
// and pins, that Restart applies a new --pod-infra-container-image, that a
// pod cannot start here, and that nothing on the host changed.
func TestStart(t *testing.T) {
	t.Parallel()
	for _, v := range Versions() {
		t.Run(string(v), func(t *testing.T) {
			t.Parallel()
			host := hostState()
			begin := time.Now()
			c := Start(t, v, Options{
				PodInfraImage: "registry.k8s.io/pause:3.10.1",
				Images: []containerdtest.Image{
					{Names: []string{"registry.k8s.io/pause:3.10.1", "k8s.gcr.io/pause:3.10.1"}},
					{Names: []string{"docker.io/library/busybox:1.36"}},
				},
			})
			t.Logf("start and load: %v", time.Since(begin))
			assert.True(t, strings.HasPrefix(c.Dir, "/tmp/"))

			// Docker stores Docker Hub names in their familiar form.
			var tags []string
			for _, ts := range c.RepoTags(t) {
				tags = append(tags, ts...)
			}
			assert.ElementsMatch(t, []string{"registry.k8s.io/pause:3.10.1", "k8s.gcr.io/pause:3.10.1", "busybox:1.36"}, tags)

			assert.Equal(t, map[string]bool{
				"registry.k8s.io/pause:3.10.1": true,
				"k8s.gcr.io/pause:3.10.1":      true,
				"busybox:1.36":                 false,
			}, pinned(t, c))

			c.Restart(t, "busybox:1.36")
			assert.Equal(t, map[string]bool{
				"registry.k8s.io/pause:3.10.1": false,
				"k8s.gcr.io/pause:3.10.1":      false,
				"busybox:1.36":                 true,
			}, pinned(t, c), "after a restart with busybox:1.36")
			unit, err := os.ReadFile(c.UnitPath)
			require.NoError(t, err)
			assert.Contains(t, string(unit), " --pod-infra-container-image busybox:1.36\n")

			// A pod cannot start: cri-dockerd gives every sandbox
			// oom_score_adj -998, which runc cannot set here.
			err = runPod(t, c)
			require.Error(t, err)
			t.Logf("RunPodSandbox: %v", err)

			c.Stop()
			assert.Equal(t, host, hostState(), "host paths (absent, or their modification times)")
		})
	}
}

// pinned returns cri-dockerd's own Image.pinned by repo tag.
func pinned(t *testing.T, c *CRIDockerd) map[string]bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conn, err := grpc.NewClient(c.Endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer func() { _ = conn.Close() }()
	resp, err := runtimeapi.NewImageServiceClient(conn).ListImages(ctx, &runtimeapi.ListImagesRequest{})
	require.NoError(t, err)
	m := map[string]bool{}
	for _, img := range resp.GetImages() {
		for _, tag := range img.GetRepoTags() {
			m[tag] = img.GetPinned()
		}
	}
	return m
}

// runPod asks cri-dockerd for a host-network sandbox.
func runPod(t *testing.T, c *CRIDockerd) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := grpc.NewClient(c.Endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer func() { _ = conn.Close() }()
	_, err = runtimeapi.NewRuntimeServiceClient(conn).RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "p", Namespace: "default", Uid: "u1"},
		Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE},
		}},
	}})
	return err
}

// hostPaths are where Docker Engine, its containerd and cri-dockerd write by
// default.
var hostPaths = []string{
	"/etc/docker", "/etc/docker/key.json", "/var/lib/docker", "/run/docker", "/run/docker.sock", "/var/run/docker.pid",
	"/opt/containerd", "/var/lib/containerd",
	"/var/lib/cri-dockerd", "/run/cri-dockerd.sock", "/etc/cni", "/opt/cni", "/var/lib/cni", "/root/.docker",
}

// hostState returns each host path's modification time, or "absent".
func hostState() map[string]string { return runtimetest.HostState(hostPaths) }

// TestUnitArgs reads the command line back from a unit the way
// RestartFromUnit does: the package's unit as writeUnit writes it, then a
// drop-in that resets ExecStart and sets another.
func TestUnitArgs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := &CRIDockerd{UnitPath: dir + "/cri-docker.service",
		Args: []string{"--network-plugin=", "--pod-infra-container-image", "k8s.gcr.io/pause:3.10.1", "--x", "a b\"c%$"}}
	require.NoError(t, c.writeUnit())
	got, err := c.UnitArgs()
	require.NoError(t, err)
	assert.Equal(t, c.Args, got)

	require.NoError(t, os.Mkdir(c.UnitPath+".d", 0o700))
	require.NoError(t, os.WriteFile(c.UnitPath+".d/10-pause.conf",
		[]byte("[Service]\nExecStart=\nExecStart=/usr/bin/cri-dockerd --a \\\n  '--pod-infra-container-image=registry.k8s.io/pause:3.10.1'\n"), 0o600))
	got, err = c.UnitArgs()
	require.NoError(t, err)
	assert.Equal(t, []string{"--a", "--pod-infra-container-image=registry.k8s.io/pause:3.10.1"}, got)

	_, err = unitWords(`/usr/bin/cri-dockerd "open`)
	require.Error(t, err)
}
