package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sandboxpin/sandboxpin/internal/containerdtest"
	"github.com/sandboxpin/sandboxpin/internal/cridockerdtest"
)

// TestLiveCRIDockerd runs the pre-flight check on nodes whose real
// cri-dockerd (0.3.14 and 0.4.4, in front of Docker Engine) is started by
// the node's cri-docker.service, before kubeadm v1.34.1 (which pulls
// registry.k8s.io/pause:3.10.1). With the same name the node is ready; with
// the alias too, but both names are to be pre-pulled, with the note's
// `docker pull && docker tag`; with another image kubeadm and cri-dockerd
// disagree, and the conflict says to change the unit's line.
func TestLiveCRIDockerd(t *testing.T) {
	t.Parallel()
	const kubeadms = "registry.k8s.io/pause:3.10.1"
	tests := []struct {
		name       string
		configured string
		wantCode   int
		wantStdout []string // substrings of stdout, in order
	}{
		{name: "same name", configured: kubeadms, wantCode: exitOK, wantStdout: []string{
			"runtime        cri-dockerd\n",
			"sandbox image  " + kubeadms + " (cri-dockerd-flags, /etc/systemd/system/cri-docker.service:8)\n",
			"pre-pull       " + kubeadms + "\n",
			"OK: the node is ready for kubeadm; pre-pull " + kubeadms + "\n",
		}},
		{name: "alias", configured: "k8s.gcr.io/pause:3.10.1", wantCode: exitOK, wantStdout: []string{
			"pre-pull       k8s.gcr.io/pause:3.10.1\n               " + kubeadms + "\n",
			"`docker pull k8s.gcr.io/pause:3.10.1 && docker tag k8s.gcr.io/pause:3.10.1 " + kubeadms + "` (cri-dockerd)",
			"OK: the node is ready for kubeadm; pre-pull k8s.gcr.io/pause:3.10.1 " + kubeadms + "\n",
		}},
		{name: "another image", configured: "registry.k8s.io/pause:3.9", wantCode: exitConflict, wantStdout: []string{
			"pre-pull       registry.k8s.io/pause:3.9\n               " + kubeadms + "\n",
			"CONFLICT 1: kubeadm v1.34.1 pre-pulls and expects " + kubeadms,
			"/etc/systemd/system/cri-docker.service:8",
			"FAIL: 1 conflict(s)",
		}},
	}
	for _, v := range cridockerdtest.Versions() {
		for _, tt := range tests {
			t.Run(string(v)+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				d := cridockerdtest.Start(t, v, cridockerdtest.Options{
					PodInfraImage: tt.configured,
					Images:        []containerdtest.Image{{Names: []string{kubeadms}}},
				})
				var stdout, stderr bytes.Buffer
				code := run([]string{"--root", d.Dir, "--runtime-endpoint", d.Endpoint, "--kubeadm-version", "v1.34.1"}, &stdout, &stderr)
				t.Logf("preflight on cri-dockerd %s:\n%s%s", v.Release(), stdout.String(), stderr.String())
				assert.Equal(t, tt.wantCode, code)
				out := stdout.String()
				for _, want := range tt.wantStdout {
					i := bytes.Index([]byte(out), []byte(want))
					if !assert.GreaterOrEqual(t, i, 0, "stdout lacks %q", want) {
						continue
					}
					out = out[i+len(want):]
				}
			})
		}
	}
}
