package audit_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/sandboxpin/sandboxpin/audit"
	"github.com/sandboxpin/sandboxpin/criinfo"
	"github.com/sandboxpin/sandboxpin/resolve"
)

// ExampleJudge audits a k3s node offline, as an installer does: resolve its
// files, read what `crictl images -o json` printed on it, and judge with
// the runtime's own lookup not asked, which Judge then predicts. k3s
// configures the short name rancher/mirrored-pause:3.6, which containerd
// stores, looks up and pins under its full name.
func ExampleJudge() {
	res, err := resolve.Resolve(context.Background(), resolve.Options{Root: resolve.DirFS("../resolve/testdata/nodes/k3s")})
	if err != nil {
		fmt.Println(err)
		return
	}
	images, err := audit.ReadImages(strings.NewReader(`{"images": [
		{"id": "sha256:1", "repoTags": ["docker.io/rancher/mirrored-pause:3.6"], "pinned": true}
	]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	v, err := audit.Judge(res, audit.ListedObservation{Images: images})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s: stored as %s (%s), predicted found by name: %v, protected: %v\n",
		v.Status, v.Sandbox.StoredAs, v.Sandbox.Spelling, v.Sandbox.StoredAsConfigured, v.Protected())
	// Output:
	// ok: stored as docker.io/rancher/mirrored-pause:3.6 (alias), predicted found by name: true, protected: true
}

// ExampleJudge_willNotStart audits a node whose kubelet 1.35 still has
// --pod-infra-container-image in a drop-in: its pause image is stored and
// pinned, but the kubelet does not start, and that fix comes first.
func ExampleJudge_willNotStart() {
	res, err := resolve.Resolve(context.Background(), resolve.Options{
		Root:           resolve.DirFS("../resolve/testdata/nodes/kubelet-flag-dropin"),
		RuntimeVersion: "2.4.2", KubeletVersion: "1.35.0",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	images := []*audit.ListedImage{{ID: "sha256:1", RepoTags: []string{"registry.k8s.io/pause:3.10.2"}, Pinned: true}}
	v, err := audit.Judge(res, audit.ListedObservation{Images: images, Lookup: audit.LookupFound})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(v.Status, v.Protected())
	for _, f := range v.Fixes {
		fmt.Printf("%s: %s %s (%s)\n", f.Urgency, f.Action, f.Where(), f.Answers)
	}
	// Output:
	// will-not-start false
	// stops: remove /etc/systemd/system/kubelet.service.d/20-sandbox.conf:2 (kubelet-rejects-flag)
}

// ExamplePredictLookup predicts, offline, whether each runtime's own lookup
// of a Docker Hub short name finds the image stored under its full name.
func ExamplePredictLookup() {
	images := []*audit.ListedImage{{ID: "sha256:1", RepoTags: []string{"docker.io/library/pause:3.10.1"}}}
	for _, runtime := range []criinfo.Runtime{criinfo.RuntimeContainerd, criinfo.RuntimeCRIDockerd, criinfo.RuntimeCRIO} {
		fmt.Println(runtime, audit.PredictLookup(runtime, "pause:3.10.1", images))
	}
	// Output:
	// containerd true
	// cri-dockerd true
	// cri-o false
}
