package cri_test

import (
	"fmt"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sandboxpin/sandboxpin/criinfo/cri"
	"github.com/sandboxpin/sandboxpin/pin"
)

func ExampleMarkPinned() {
	// containerd 2.2 lists the pause image unpinned: its config names the
	// image k8s.gcr.io/pause:3.10.1, an alias of the name it stores.
	images := []*runtimeapi.Image{
		{Id: "sha256:1111111111111111111111111111111111111111111111111111111111111111", RepoTags: []string{"registry.k8s.io/pause:3.10.1"}},
		{Id: "sha256:2222222222222222222222222222222222222222222222222222222222222222", RepoTags: []string{"docker.io/library/busybox:1.36"}},
	}
	m, err := pin.Compile([]string{"k8s.gcr.io/pause:3.10.1"})
	if err != nil {
		fmt.Println(err)
		return
	}
	cri.MarkPinned(m, images)
	for _, img := range images {
		fmt.Println(img.GetRepoTags()[0], img.GetPinned())
	}
	// Output:
	// registry.k8s.io/pause:3.10.1 true
	// docker.io/library/busybox:1.36 false
}
