// Command crishim shows, in a few lines, how a CRI shim or runtime author
// makes Image.Pinned right: a gRPC interceptor that runs [cri.MarkPinned]
// with a [pin.Matcher] over every ListImages and ImageStatus answer.
//
// This program installs the interceptor on its own connection to the
// runtime and lists the images with the pinned flag corrected, as the
// kubelet would see them through such a shim:
//
//	go run ./examples/crishim --runtime-endpoint unix:///run/containerd/containerd.sock \
//		--pin registry.k8s.io/pause:3.10.1
//
// It prints one line per image: its first tag (or ID), the runtime's own
// pinned flag, and the corrected one. Exit 0, or 2 on error.
//
// For a node, do not write a shim: run `sandboxpin shim` (package
// crishim), which relays every call undecoded, resolves the node's
// sandbox image itself and ships with a systemd unit. Write an
// interceptor like this one when your own server already decodes CRI
// calls (a runtime, a shim that does more than pin).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sandboxpin/sandboxpin/criinfo/cri"
	"github.com/sandboxpin/sandboxpin/pin"
)

// pinInterceptor returns a unary client interceptor that sets Pinned on the
// images m pins in the answers to ListImages and ImageStatus. It never
// clears a Pinned the runtime set (MarkPinned does not). On a server that
// decodes CRI calls, the same switch goes in a grpc.UnaryServerInterceptor,
// after the handler.
func pinInterceptor(m *pin.Matcher) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoke grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if err := invoke(ctx, method, req, reply, cc, opts...); err != nil {
			return err
		}
		switch r := reply.(type) {
		case *runtimeapi.ListImagesResponse:
			cri.MarkPinned(m, r.GetImages())
		case *runtimeapi.ImageStatusResponse:
			if r.GetImage() != nil {
				cri.MarkPinned(m, []*runtimeapi.Image{r.GetImage()})
			}
		}
		return nil
	}
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run is the program: it returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("crishim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	endpoint := fs.String("runtime-endpoint", "", "the runtime's CRI socket, unix:///path (required)")
	var pins []string
	fs.Func("pin", "a pin `pattern` (repeatable): reference, digest, prefix* or *keyword*",
		func(p string) error { pins = append(pins, p); return nil })
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp { //nolint:errorlint // flag returns ErrHelp itself
			return 0
		}
		return 2
	}
	if *endpoint == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "crishim: want --runtime-endpoint unix:///path and no arguments")
		return 2
	}
	m, err := pin.Compile(pins)
	if err != nil {
		fmt.Fprintln(stderr, "crishim:", err)
		return 2
	}
	conn, err := grpc.NewClient(*endpoint,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUnaryInterceptor(pinInterceptor(m)))
	if err != nil {
		fmt.Fprintln(stderr, "crishim:", err)
		return 2
	}
	defer func() { _ = conn.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// The runtime's own flags, for comparison: a connection without the
	// interceptor.
	raw, err := grpc.NewClient(*endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fmt.Fprintln(stderr, "crishim:", err)
		return 2
	}
	defer func() { _ = raw.Close() }()
	own, err := runtimeapi.NewImageServiceClient(raw).ListImages(ctx, &runtimeapi.ListImagesRequest{})
	if err != nil {
		fmt.Fprintln(stderr, "crishim:", err)
		return 2
	}
	fixed, err := runtimeapi.NewImageServiceClient(conn).ListImages(ctx, &runtimeapi.ListImagesRequest{})
	if err != nil {
		fmt.Fprintln(stderr, "crishim:", err)
		return 2
	}
	runtimePinned := map[string]bool{}
	for _, img := range own.GetImages() {
		runtimePinned[img.GetId()] = img.GetPinned()
	}
	for _, img := range fixed.GetImages() {
		name := img.GetId()
		if tags := img.GetRepoTags(); len(tags) > 0 {
			name = tags[0]
		}
		fmt.Fprintf(stdout, "%s runtime=%v shim=%v\n", name, runtimePinned[img.GetId()], img.GetPinned())
	}
	return 0
}
