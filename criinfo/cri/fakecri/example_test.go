package fakecri_test

import (
	"context"
	"fmt"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sandboxpin/sandboxpin/criinfo/cri/fakecri"
)

// A Runtime answers with what it holds; a test serves it with Serve and
// dials the path Serve returns (see the package doc). Here its answers are
// asked directly.
func ExampleRuntime() {
	rt := &fakecri.Runtime{
		RuntimeName: "containerd", RuntimeVersion: "v2.2.9",
		Images: []*runtimeapi.Image{{Id: "sha256:aa", RepoTags: []string{"registry.k8s.io/pause:3.10.1"}}},
	}
	ctx := context.Background()
	v, _ := rt.Version(ctx, &runtimeapi.VersionRequest{})
	fmt.Println(v.GetRuntimeName(), v.GetRuntimeVersion())
	st, _ := rt.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: "registry.k8s.io/pause:3.10.1"}})
	fmt.Println(st.GetImage().GetId())
	st, _ = rt.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: "k8s.gcr.io/pause:3.10.1"}})
	fmt.Println(st.GetImage() == nil)
	// Output:
	// containerd v2.2.9
	// sha256:aa
	// true
}

// ImagesOfSize builds a ListImages answer of an exact size, such as one
// just over gRPC's default receive limit of 4 MiB.
func ExampleImagesOfSize() {
	images := fakecri.ImagesOfSize(4<<20 + 1)
	fmt.Println(fakecri.ListSize(images) == 4<<20+1)
	// Output:
	// true
}
