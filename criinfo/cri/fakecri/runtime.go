package fakecri

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Method names passed to [Runtime.Hook].
const (
	MethodVersion     = "Version"
	MethodStatus      = "Status"
	MethodListImages  = "ListImages"
	MethodImageStatus = "ImageStatus"
	MethodPullImage   = "PullImage"
)

// Runtime is a fake CRI runtime with canned answers. Serve it with [Serve].
type Runtime struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	runtimeapi.UnimplementedImageServiceServer

	// RuntimeName and RuntimeVersion are what Version reports.
	RuntimeName, RuntimeVersion string
	// Info is StatusResponse.Info, sent only when the request is verbose
	// (as containerd and CRI-O do).
	Info map[string]string
	// Images is what ListImages returns; ImageStatus finds an image in it
	// by any of its tags, and answers a nil image for any other name.
	Images []*runtimeapi.Image
	// Hook, when not nil, runs at the start of every call with the
	// method's name (MethodVersion, ...); an error it returns is the call's
	// answer. Tests use it to delay, count or block calls.
	Hook func(ctx context.Context, method string) error

	// pulled are the names PullImage was asked for, in order.
	pullMu sync.Mutex
	pulled []string

	// The ListImages and verbose Status answers, built once, and their
	// wire form, which the codec of Serve sends instead of marshalling
	// them for each call.
	once    sync.Once
	list    *runtimeapi.ListImagesResponse
	verbose *runtimeapi.StatusResponse
	wire    map[any][]byte
}

// answers builds the ListImages and verbose Status answers and their wire
// form, once.
func (r *Runtime) answers() {
	r.once.Do(func() {
		r.list = &runtimeapi.ListImagesResponse{Images: r.Images}
		r.verbose = &runtimeapi.StatusResponse{Status: &runtimeapi.RuntimeStatus{}, Info: r.Info}
		r.wire = map[any][]byte{}
		for _, m := range []proto.Message{r.list, r.verbose} {
			if b, err := proto.Marshal(m); err == nil {
				r.wire[m] = b
			}
		}
	})
}

// codec is gRPC's proto codec, except that it sends the Runtime's big
// answers in the wire form built once: marshalling 20 MiB of images anew
// for each call takes seconds under -race on a loaded machine, and would
// count in what the tests measure of the client.
type codec struct{ r *Runtime }

func (c codec) Marshal(v any) ([]byte, error) {
	if c.r != nil {
		if b, ok := c.r.wire[v]; ok {
			return b, nil
		}
	}
	return proto.Marshal(v.(proto.Message))
}

func (codec) Unmarshal(data []byte, v any) error { return proto.Unmarshal(data, v.(proto.Message)) }

func (codec) Name() string { return "proto" }

func (r *Runtime) hook(ctx context.Context, method string) error {
	if r.Hook == nil {
		return nil
	}
	return r.Hook(ctx, method)
}

// Version reports RuntimeName and RuntimeVersion.
func (r *Runtime) Version(ctx context.Context, _ *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	if err := r.hook(ctx, MethodVersion); err != nil {
		return nil, err
	}
	return &runtimeapi.VersionResponse{Version: "0.1.0", RuntimeName: r.RuntimeName, RuntimeVersion: r.RuntimeVersion, RuntimeApiVersion: "v1"}, nil
}

// Status reports a runtime with no conditions, and Info when verbose.
func (r *Runtime) Status(ctx context.Context, req *runtimeapi.StatusRequest) (*runtimeapi.StatusResponse, error) {
	if err := r.hook(ctx, MethodStatus); err != nil {
		return nil, err
	}
	if req.GetVerbose() {
		r.answers()
		return r.verbose, nil
	}
	return &runtimeapi.StatusResponse{Status: &runtimeapi.RuntimeStatus{}}, nil
}

// ListImages returns Images, whatever the filter.
func (r *Runtime) ListImages(ctx context.Context, _ *runtimeapi.ListImagesRequest) (*runtimeapi.ListImagesResponse, error) {
	if err := r.hook(ctx, MethodListImages); err != nil {
		return nil, err
	}
	r.answers()
	return r.list, nil
}

// ImageStatus returns the image of Images that has the requested name as
// one of its tags, or a nil image as real runtimes do for an absent one.
func (r *Runtime) ImageStatus(ctx context.Context, req *runtimeapi.ImageStatusRequest) (*runtimeapi.ImageStatusResponse, error) {
	if err := r.hook(ctx, MethodImageStatus); err != nil {
		return nil, err
	}
	name := req.GetImage().GetImage()
	if name == "" {
		return nil, status.Error(codes.InvalidArgument, "no image name")
	}
	for _, img := range r.Images {
		for _, tag := range img.GetRepoTags() {
			if tag == name {
				return &runtimeapi.ImageStatusResponse{Image: img}, nil
			}
		}
	}
	return &runtimeapi.ImageStatusResponse{}, nil
}

// PullImage records the name it is asked to pull and answers an image
// reference of its own; it stores nothing (Images stays as it is).
func (r *Runtime) PullImage(ctx context.Context, req *runtimeapi.PullImageRequest) (*runtimeapi.PullImageResponse, error) {
	if err := r.hook(ctx, MethodPullImage); err != nil {
		return nil, err
	}
	r.pullMu.Lock()
	defer r.pullMu.Unlock()
	r.pulled = append(r.pulled, req.GetImage().GetImage())
	return &runtimeapi.PullImageResponse{ImageRef: "sha256:pulled"}, nil
}

// Pulled returns the names PullImage was asked for, in order.
func (r *Runtime) Pulled() []string {
	r.pullMu.Lock()
	defer r.pullMu.Unlock()
	return append([]string(nil), r.pulled...)
}

// Serve serves r on a new unix socket, until the test ends, and returns the
// socket's path. A nil r serves gRPC without the CRI services. The server
// sends messages of any size (gRPC's default send limit is 2 GiB): limits
// are the client's to enforce. It marshals r's ListImages and verbose
// Status answers before it returns, once: a call costs the server no more
// than writing them.
func Serve(tb testing.TB, r *Runtime, opts ...grpc.ServerOption) string {
	tb.Helper()
	// Not tb.TempDir: a unix socket path is limited to 108 bytes, which
	// TempDir under a long test name exceeds.
	dir, err := os.MkdirTemp("", "crist")
	if err != nil {
		tb.Fatalf("fakecri: %v", err)
	}
	tb.Cleanup(func() { _ = os.RemoveAll(dir) })
	path := filepath.Join(dir, "cri.sock")
	lis, err := net.Listen("unix", path)
	if err != nil {
		tb.Fatalf("fakecri: %v", err)
	}
	if r != nil {
		r.answers()
	}
	srv := grpc.NewServer(append([]grpc.ServerOption{grpc.ForceServerCodec(codec{r})}, opts...)...)
	if r != nil {
		runtimeapi.RegisterRuntimeServiceServer(srv, r)
		runtimeapi.RegisterImageServiceServer(srv, r)
	}
	go func() { _ = srv.Serve(lis) }()
	tb.Cleanup(srv.Stop)
	return path
}
