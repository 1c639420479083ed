package release_test

import (
	"fmt"

	"github.com/sandboxpin/sandboxpin/internal/release"
)

func ExampleImage() {
	idx, err := release.Image("v0.1.0", []release.Binary{{Arch: "amd64", Data: []byte("…")}, {Arch: "arm64", Data: []byte("…")}})
	if err != nil {
		fmt.Println(err)
		return
	}
	man, err := idx.IndexManifest()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, d := range man.Manifests {
		img, err := idx.Image(d.Digest)
		if err != nil {
			fmt.Println(err)
			return
		}
		cf, err := img.ConfigFile()
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(d.Platform.OS+"/"+d.Platform.Architecture, cf.Config.Entrypoint, cf.Config.Labels["org.opencontainers.image.version"])
	}
	// Output:
	// linux/amd64 [/sandboxpin] v0.1.0
	// linux/arm64 [/sandboxpin] v0.1.0
}
