package resolve_test

import (
	"context"
	"fmt"
	"testing/fstest"

	"github.com/sandboxpin/sandboxpin/resolve"
)

func Example() {
	// A node's root file system; in production leave Root nil to read "/".
	node := fstest.MapFS{
		"etc/containerd/config.toml": {Data: []byte(`version = 2
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "k8s.gcr.io/pause:3.9"
`)},
		"var/lib/kubelet/kubeadm-flags.env": {Data: []byte(
			`KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=unix:///run/containerd/containerd.sock --pod-infra-container-image=registry.k8s.io/pause:3.8"` + "\n")},
	}
	res, err := resolve.Resolve(context.Background(), resolve.Options{
		Root:           node,
		RuntimeVersion: "1.7.20",
		KubeadmVersion: "v1.30.3",
		KubeletVersion: "v1.28.9",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("runtime:", res.Runtime)
	fmt.Println("sandbox image:", res.SandboxImage)
	for _, c := range res.Candidates {
		fmt.Printf("  %-17s %-26s %s\n", c.Source, c.Image, c.Origin)
	}
	for _, c := range res.Conflicts {
		fmt.Println("conflict:", c.A.Origin, "vs", c.B.Origin)
	}
	fmt.Println("pins:", res.Pins)
	fmt.Println("prepull:", res.Prepull)
	// Output:
	// runtime: containerd
	// sandbox image: k8s.gcr.io/pause:3.9
	//   containerd-config k8s.gcr.io/pause:3.9       /etc/containerd/config.toml:3
	//   runtime-default   registry.k8s.io/pause:3.8  default of containerd 1.7.20
	//   kubelet-flags     registry.k8s.io/pause:3.8  /var/lib/kubelet/kubeadm-flags.env:1
	//   kubeadm-default   registry.k8s.io/pause:3.9  default of kubeadm v1.30.3
	// conflict: /var/lib/kubelet/kubeadm-flags.env:1 vs /etc/containerd/config.toml:3
	// pins: [k8s.gcr.io/pause:3.9]
	// prepull: [k8s.gcr.io/pause:3.9 registry.k8s.io/pause:3.9]
}

func ExampleKubeadmPauseImage() {
	for _, v := range []string{"v1.24.8", "v1.24.9", "1.34.0-beta.0", "v1.34.2"} {
		img, err := resolve.KubeadmPauseImage(v, "")
		fmt.Println(v, img, err)
	}
	img, _ := resolve.KubeadmPauseImage("v1.30.3", "mirror.example.com/k8s")
	fmt.Println(img)
	_, err := resolve.KubeadmPauseImage("v1.99.0", "")
	fmt.Println(err)
	// Output:
	// v1.24.8 k8s.gcr.io/pause:3.7 <nil>
	// v1.24.9 registry.k8s.io/pause:3.7 <nil>
	// 1.34.0-beta.0 registry.k8s.io/pause:3.10 <nil>
	// v1.34.2 registry.k8s.io/pause:3.10.1 <nil>
	// mirror.example.com/k8s/pause:3.9
	// resolve: kubeadm version "v1.99.0": unknown version: no pause version known for it (newest read: v1.38.0-beta.0)
}

func ExampleRuntimeDefaultImage() {
	img, err := resolve.RuntimeDefaultImage("containerd", "v2.2.9")
	fmt.Println(img, err)
	// Output:
	// registry.k8s.io/pause:3.10.1 <nil>
}

// ExampleComponentVersion resolves a Debian node whose containerd config
// sets no sandbox image: the version in the package database picks
// containerd's built-in default.
func ExampleComponentVersion() {
	node := fstest.MapFS{
		"etc/containerd/config.toml": {Data: []byte("version = 2\n")},
		"var/lib/dpkg/status": {Data: []byte("Package: containerd\nStatus: install ok installed\n" +
			"Architecture: amd64\nVersion: 1.6.20~ds1-1+deb12u3\n\n")},
	}
	res, err := resolve.Resolve(context.Background(), resolve.Options{Root: node})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("sandbox image:", res.SandboxImage)
	fmt.Println("from:", res.Candidates[0].Origin)
	for _, v := range res.Versions {
		fmt.Printf("%s %s at %s (used: %v)\n", v.Component, v.Version, v.Origin, v.Used)
	}
	// Output:
	// sandbox image: registry.k8s.io/pause:3.6
	// from: default of containerd 1.6.20 (version from /var/lib/dpkg/status:4)
	// containerd 1.6.20~ds1-1+deb12u3 at /var/lib/dpkg/status:4 (used: true)
}

func ExampleResult_Matcher() {
	// A CRI-O node whose pause_image is an alias spelling of the stored image.
	node := fstest.MapFS{
		"etc/crio/crio.conf": {Data: []byte("[crio.image]\npause_image = \"k8s.gcr.io/pause:3.10.1\"\n")},
	}
	res, err := resolve.Resolve(context.Background(), resolve.Options{Root: node})
	if err != nil {
		fmt.Println(err)
		return
	}
	m, err := res.Matcher("registry.example.com/infra/*")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, img := range []string{"registry.k8s.io/pause:3.10.1", "registry.example.com/infra/agent:1", "docker.io/library/busybox:1.36"} {
		fmt.Println(img, m.IsPinned(img))
	}
	// Output:
	// registry.k8s.io/pause:3.10.1 true
	// registry.example.com/infra/agent:1 true
	// docker.io/library/busybox:1.36 false
}
