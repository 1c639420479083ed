package cri_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sandboxpin/sandboxpin/audit"
	"github.com/sandboxpin/sandboxpin/criinfo/cri"
	"github.com/sandboxpin/sandboxpin/criinfo/cri/fakecri"
	"github.com/sandboxpin/sandboxpin/resolve"
)

// Example_audit audits a live node: resolve its sandbox image with what the
// runtime reports, list its images, ask its own lookup of the configured
// name, and judge. Here the node is a stand-in for containerd 1.6.20 (which
// never sets Image.pinned) on an empty root; on a real node, give the
// runtime's socket and leave Root nil (the node's "/").
func Example_audit() {
	endpoint, root, stop := fakeNode()
	defer stop()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client, err := cri.Dial(ctx, endpoint)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	res, err := resolve.Resolve(ctx, resolve.Options{Root: resolve.DirFS(root), Live: client})
	if err != nil {
		fmt.Println(err)
		return
	}
	images, err := client.Images(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	own, err := client.ImageStatus(ctx, res.SandboxImage) // the runtime's own lookup
	if err != nil {
		fmt.Println(err)
		return
	}
	lookup := audit.LookupNotFound
	if own.GetId() != "" {
		lookup = audit.LookupFound
	}
	v, err := audit.Judge(res, audit.Observation[*runtimeapi.Image]{Images: images, Lookup: lookup})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s %s: %s, stored as %s (%s), pinned by the runtime: %v\n",
		v.Runtime, v.RuntimeVersion, v.Status, v.Sandbox.StoredAs, v.Sandbox.Spelling, v.Sandbox.Pinned)
	if !v.Protected() {
		fmt.Printf("fix (%s): %s %s %s\n", v.Fix.Answers, v.Fix.Action, v.Fix.Component, v.Fix.Version)
	}
	// Output:
	// containerd v1.6.20: unpinned, stored as registry.k8s.io/pause:3.10.1 (exact), pinned by the runtime: false
	// fix (containerd-never-pins): upgrade containerd 1.6.29
}

// fakeNode serves a stand-in for containerd 1.6.20 on a temporary socket:
// its Status reports the sandbox image as containerd 1.x does, and it stores
// that image unpinned beside a mirror's tag of it. It returns the endpoint,
// an empty node root and a function that stops it all.
func fakeNode() (endpoint, root string, stop func()) {
	dir, err := os.MkdirTemp("", "spex")
	if err != nil {
		panic(err)
	}
	lis, err := net.Listen("unix", filepath.Join(dir, "cri.sock"))
	if err != nil {
		panic(err)
	}
	const pause = "registry.k8s.io/pause:3.10.1"
	rt := &fakecri.Runtime{
		RuntimeName: "containerd", RuntimeVersion: "v1.6.20",
		Info:   map[string]string{"config": `{"sandboxImage":"` + pause + `"}`},
		Images: []*runtimeapi.Image{{Id: "sha256:1", RepoTags: []string{"harbor.example.com/mirror/pause:3.10.1", pause}}},
	}
	srv := grpc.NewServer()
	runtimeapi.RegisterRuntimeServiceServer(srv, rt)
	runtimeapi.RegisterImageServiceServer(srv, rt)
	go func() { _ = srv.Serve(lis) }()
	root = filepath.Join(dir, "root")
	if err := os.Mkdir(root, 0o750); err != nil {
		panic(err)
	}
	return "unix://" + lis.Addr().String(), root, func() { srv.Stop(); _ = os.RemoveAll(dir) }
}
