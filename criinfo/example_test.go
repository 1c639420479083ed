package criinfo_test

import (
	"errors"
	"fmt"

	"github.com/sandboxpin/sandboxpin/criinfo"
)

func Example() {
	// The Info map of a Status{Verbose: true} answer from containerd 1.6
	// (shortened).
	info, err := criinfo.Parse(map[string]string{
		"config":            `{"sandboxImage":"registry.k8s.io/pause:3.6","containerdEndpoint":"/run/containerd/containerd.sock"}`,
		"lastCNILoadStatus": "cni config load failed: no network config found in /etc/cni/net.d",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(info.Runtime, info.SandboxImageReported, info.SandboxImage)
	// Output: containerd true registry.k8s.io/pause:3.6
}

func ExampleParse_containerd2() {
	// containerd 2.x reports its endpoint but no sandbox image: read the
	// config file instead.
	info, err := criinfo.Parse(map[string]string{
		"config": `{"containerd":{"defaultRuntimeName":"runc"},"containerdEndpoint":"/run/containerd/containerd.sock"}`,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s reported=%t image=%q\n", info.Runtime, info.SandboxImageReported, info.SandboxImage)
	// Output: containerd reported=false image=""
}

func ExampleParseJSON() {
	// `crictl info` against CRI-O or cri-dockerd.
	out := []byte(`{
  "status": {"conditions": [{"type": "RuntimeReady", "status": true}]},
  "config": {"sandboxImage": "registry.k8s.io/pause:3.10"}
}`)
	info, err := criinfo.ParseJSON(out)
	if err != nil {
		fmt.Println(err)
		return
	}
	// The Info map alone does not tell CRI-O from cri-dockerd.
	fmt.Println(info.Runtime, info.SandboxImage)
	// Output: unknown registry.k8s.io/pause:3.10
}

func ExampleParseError() {
	_, err := criinfo.Parse(map[string]string{"config": `{"sandboxImage": ["registry.k8s.io/pause:3.10"]}`})
	var pe *criinfo.ParseError
	if errors.As(err, &pe) {
		fmt.Println(pe.Key, pe.Offset, errors.Is(err, criinfo.ErrInvalidInfo))
	}
	fmt.Println(err)
	// Output:
	// config 17 true
	// criinfo: key "config": offset 17: invalid runtime info: config.sandboxImage is an array, want a string
}
