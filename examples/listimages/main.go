// Command listimages is a pinning CRI shim's ListImages filter: it resolves the
// node, compiles what must be pinned there with Result.Matcher, and sets pinned
// on those of the images `crictl images -o json` listed (stdin).
//
//	crictl images -o json | go run ./listimages -root / -runtime-version 2.4.2
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/sandboxpin/sandboxpin/audit"
	"github.com/sandboxpin/sandboxpin/resolve"
)

func main() {
	var o resolve.Options // zero: the host's root, versions read from it
	flag.Func("root", "the node's root file system (default /)", func(s string) error { o.Root = resolve.DirFS(s); return nil })
	flag.StringVar(&o.RuntimeVersion, "runtime-version", "", "the runtime's version")
	flag.Parse()
	res := must(resolve.Resolve(context.Background(), o)) // an error when it cannot tell the sandbox image
	m := must(res.Matcher())                              // a shim builds it once, and again on reload
	images := must(audit.ReadImages(os.Stdin))
	for _, img := range images { // as in ListImages and ImageStatus: never clear the runtime's own true
		img.Pinned = img.Pinned || m.IsPinnedImage(img)
	}
	must(0, json.NewEncoder(os.Stdout).Encode(map[string]any{"images": images}))
}

func must[T any](v T, err error) T {
	if err != nil {
		fmt.Fprintln(os.Stderr, "listimages:", err)
		os.Exit(2)
	}
	return v
}
