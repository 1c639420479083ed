package remedy_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sandboxpin/sandboxpin/remedy"
	"github.com/sandboxpin/sandboxpin/resolve"
)

func Example() {
	// A node whose containerd 1.7 names its sandbox image on the frozen
	// registry, where containerd never pins the name it stores.
	dir, _ := os.MkdirTemp("", "node")
	defer os.RemoveAll(dir)
	_ = os.MkdirAll(filepath.Join(dir, "etc/containerd"), 0o750)
	_ = os.WriteFile(filepath.Join(dir, "etc/containerd/config.toml"), []byte(`version = 2
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "k8s.gcr.io/pause:3.9" # the old registry
`), 0o600)

	ctx := context.Background()
	opts := resolve.Options{Root: resolve.DirFS(dir), RuntimeVersion: "1.7.20"}
	res, err := resolve.Resolve(ctx, opts)
	if err != nil {
		fmt.Println(err)
		return
	}
	plan, err := remedy.For(ctx, res, nil, opts.Root)
	if err == nil {
		err = remedy.Verify(ctx, plan, opts, nil)
	}
	if err == nil {
		err = remedy.Apply(ctx, plan, opts.Root, remedy.ApplyOptions{})
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, e := range plan.Edits {
		fmt.Print(e.Diff)
	}
	for _, s := range plan.Steps {
		fmt.Println(s.Action, s.Commands)
	}
	// Output:
	// --- a/etc/containerd/config.toml
	// +++ b/etc/containerd/config.toml
	// @@ -1,3 +1,3 @@
	//  version = 2
	//  [plugins."io.containerd.grpc.v1.cri"]
	// -  sandbox_image = "k8s.gcr.io/pause:3.9" # the old registry
	// +  sandbox_image = "registry.k8s.io/pause:3.9" # the old registry
	// pull [crictl pull registry.k8s.io/pause:3.9]
	// label [ctr -n k8s.io images label registry.k8s.io/pause:3.9 io.cri-containerd.pinned=pinned]
	// restart [systemctl restart containerd.service]
}
