//go:build unix

package resolve_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sandboxpin/sandboxpin/resolve"
)

// A node image whose containerd config is an absolute link, as in k0s,
// Talos or NixOS images: through DirFS the link resolves inside the image,
// not on the host that reads it.
func ExampleDirFS() {
	image, err := os.MkdirTemp("", "node-image")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(image)
	target := filepath.Join(image, "opt/real/config.toml")
	_ = os.MkdirAll(filepath.Dir(target), 0o750)
	_ = os.WriteFile(target, []byte("version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = \"registry.k8s.io/pause:3.10\"\n"), 0o600)
	_ = os.MkdirAll(filepath.Join(image, "etc/containerd"), 0o750)
	_ = os.Symlink("/opt/real/config.toml", filepath.Join(image, "etc/containerd/config.toml"))

	res, err := resolve.Resolve(context.Background(), resolve.Options{Root: resolve.DirFS(image)})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.SandboxImage, "from", res.Candidates[0].Origin)
	// Output: registry.k8s.io/pause:3.10 from /etc/containerd/config.toml:3
}
