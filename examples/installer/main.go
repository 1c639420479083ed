// Command installer prints as JSON the images to pre-pull on a node and its verdict, fixes included,
// on the images `crictl images -o json` listed there (stdin); exit 1: not protected, 2: an error.
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
	flag.StringVar(&o.KubeletVersion, "kubelet-version", "", "the kubelet's version")
	flag.StringVar(&o.KubeadmVersion, "kubeadm-version", "", "the version of the kubeadm that installs it")
	flag.StringVar(&o.KubeadmConfigPath, "kubeadm-config", "", "kubeadm's ClusterConfiguration in the root")
	flag.Parse()
	res := must(resolve.Resolve(context.Background(), o))
	images := must(audit.ReadImages(os.Stdin)) // offline: Judge predicts the runtime's own lookup
	v := must(audit.Judge(res, audit.ListedObservation{Images: images}))
	must(0, json.NewEncoder(os.Stdout).Encode(map[string]any{"prepull": res.Prepull, "verdict": v}))
	if !v.Protected() {
		os.Exit(1)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		fmt.Fprintln(os.Stderr, "installer:", err)
		os.Exit(2)
	}
	return v
}
