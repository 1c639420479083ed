package crishim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sandboxpin/sandboxpin/pin"
)

// futureMethod is a method this cri-api version does not define; the fake
// runtime answers it (and any other unknown method) by echoing.
const futureMethod = "/runtime.v1.ImageService/FutureListImages"

// fakeRuntime is an in-process CRI runtime: Version, Status, ListImages,
// StreamImages and ImageStatus over a fixed image list, and an echo for
// unknown methods.
type fakeRuntime struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	runtimeapi.UnimplementedImageServiceServer
	images []*runtimeapi.Image
	// sandboxes and containers are what ListPodSandbox and ListContainers
	// answer (the PLEG benchmark's node).
	sandboxes  []*runtimeapi.PodSandbox
	containers []*runtimeapi.Container
}

func (f *fakeRuntime) ListPodSandbox(context.Context, *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	return &runtimeapi.ListPodSandboxResponse{Items: f.sandboxes}, nil
}

func (f *fakeRuntime) ListContainers(context.Context, *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	return &runtimeapi.ListContainersResponse{Containers: f.containers}, nil
}

func (f *fakeRuntime) Version(context.Context, *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{Version: "0.1.0", RuntimeName: "containerd", RuntimeVersion: "v2.2.9", RuntimeApiVersion: "v1"}, nil
}

func (f *fakeRuntime) Status(context.Context, *runtimeapi.StatusRequest) (*runtimeapi.StatusResponse, error) {
	return &runtimeapi.StatusResponse{Status: &runtimeapi.RuntimeStatus{}}, nil
}

func (f *fakeRuntime) ListImages(context.Context, *runtimeapi.ListImagesRequest) (*runtimeapi.ListImagesResponse, error) {
	return &runtimeapi.ListImagesResponse{Images: f.images}, nil
}

// StreamImages sends the images two per message.
func (f *fakeRuntime) StreamImages(_ *runtimeapi.StreamImagesRequest, ss grpc.ServerStreamingServer[runtimeapi.StreamImagesResponse]) error {
	for i := 0; i < len(f.images); i += 2 {
		if err := ss.Send(&runtimeapi.StreamImagesResponse{Images: f.images[i:min(i+2, len(f.images))]}); err != nil {
			return err
		}
	}
	return nil
}

// ImageStatus finds the image by its first tag; an unknown one is NotFound
// (real runtimes answer a nil image; the error shows that statuses pass).
func (f *fakeRuntime) ImageStatus(ctx context.Context, req *runtimeapi.ImageStatusRequest) (*runtimeapi.ImageStatusResponse, error) {
	_ = grpc.SetHeader(ctx, metadata.Pairs("x-fake-header", "status"))
	for _, img := range f.images {
		if img.GetRepoTags()[0] == req.GetImage().GetImage() {
			return &runtimeapi.ImageStatusResponse{Image: img}, nil
		}
	}
	if req.GetImage().GetImage() == "absent:nil" {
		return &runtimeapi.ImageStatusResponse{}, nil
	}
	return nil, status.Errorf(codes.NotFound, "image %q not found", req.GetImage().GetImage())
}

// fakeEvents are the events GetContainerEvents sends before it waits for
// the client to go.
const fakeEvents = 3

// GetContainerEvents sends fakeEvents events, then waits, as a runtime's
// event stream does, until the client ends the call.
func (f *fakeRuntime) GetContainerEvents(_ *runtimeapi.GetEventsRequest, ss grpc.ServerStreamingServer[runtimeapi.ContainerEventResponse]) error {
	for i := range fakeEvents {
		if err := ss.Send(&runtimeapi.ContainerEventResponse{ContainerId: fmt.Sprint(i), CreatedAt: int64(i)}); err != nil {
			return err
		}
	}
	<-ss.Context().Done()
	return ss.Context().Err()
}

// streamingURL is where the fake runtime's streaming server would be:
// Exec, Attach and PortForward answer it with the call's kind and
// container or sandbox.
func streamingURL(kind, id string) string { return "http://127.0.0.1:10010/" + kind + "/" + id }

func (f *fakeRuntime) Exec(_ context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	return &runtimeapi.ExecResponse{Url: streamingURL("exec", req.GetContainerId())}, nil
}

func (f *fakeRuntime) Attach(_ context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	return &runtimeapi.AttachResponse{Url: streamingURL("attach", req.GetContainerId())}, nil
}

func (f *fakeRuntime) PortForward(_ context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	return &runtimeapi.PortForwardResponse{Url: streamingURL("portforward", req.GetPodSandboxId())}, nil
}

// echo answers unknown methods: every message comes back prefixed with the
// method name, with the client's "x-echo" metadata as header and trailer.
func echo(_ any, ss grpc.ServerStream) error {
	method, _ := grpc.MethodFromServerStream(ss)
	md, _ := metadata.FromIncomingContext(ss.Context())
	if err := ss.SendHeader(metadata.MD{"x-echo": md.Get("x-echo")}); err != nil {
		return err
	}
	ss.SetTrailer(metadata.MD{"x-echo-trailer": md.Get("x-echo")})
	for {
		f := new(rawFrame)
		if err := ss.RecvMsg(f); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if string(f.data) == "fail" {
			return status.Error(codes.FailedPrecondition, "echo refuses")
		}
		if err := ss.SendMsg(&rawFrame{data: append([]byte(method+":"), f.data...)}); err != nil {
			return err
		}
	}
}

// rawFrame is a message as bytes, for tests that send and receive what no
// cri-api message decodes.
type rawFrame struct{ data []byte }

// rawCodec moves a *rawFrame's bytes. Its name is empty, as wireCodec's.
type rawCodec struct{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	f, ok := v.(*rawFrame)
	if !ok {
		return nil, fmt.Errorf("raw codec: cannot marshal %T", v)
	}
	return mem.BufferSlice{mem.SliceBuffer(f.data)}, nil
}

// Unmarshal copies data: gRPC frees it when this returns.
func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	f, ok := v.(*rawFrame)
	if !ok {
		return fmt.Errorf("raw codec: cannot unmarshal into %T", v)
	}
	f.data = data.Materialize()
	return nil
}

func (rawCodec) Name() string { return "" }

// testCodec passes *rawFrame raw and everything else as protobuf, so the
// fake serves both registered services and the echo.
type testCodec struct{}

func (testCodec) Marshal(v any) (mem.BufferSlice, error) {
	if _, ok := v.(*rawFrame); ok {
		return rawCodec{}.Marshal(v)
	}
	return encoding.GetCodecV2("proto").Marshal(v)
}

func (testCodec) Unmarshal(data mem.BufferSlice, v any) error {
	if _, ok := v.(*rawFrame); ok {
		return rawCodec{}.Unmarshal(data, v)
	}
	return encoding.GetCodecV2("proto").Unmarshal(data, v)
}

func (testCodec) Name() string { return "proto" }

// startFake serves f on a unix socket in a temporary directory and returns
// the socket path.
func startFake(tb testing.TB, f *fakeRuntime) string {
	tb.Helper()
	path := filepath.Join(shortTempDir(tb), "fake.sock")
	lis, err := net.Listen("unix", path)
	require.NoError(tb, err)
	srv := grpc.NewServer(grpc.ForceServerCodecV2(testCodec{}), grpc.UnknownServiceHandler(echo))
	runtimeapi.RegisterRuntimeServiceServer(srv, f)
	runtimeapi.RegisterImageServiceServer(srv, f)
	go func() { _ = srv.Serve(lis) }()
	tb.Cleanup(srv.Stop)
	return path
}

// shortTempDir returns a temporary directory, removed when the test ends,
// with a path short enough for a unix socket (108 bytes), which t.TempDir
// under a long test name can exceed.
func shortTempDir(tb testing.TB) string {
	tb.Helper()
	dir, err := os.MkdirTemp("", "crishim")
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// startShim serves a shim in front of the socket at runtimePath, pinning
// what load returns, until the test ends; it returns the shim and its
// socket path.
func startShim(tb testing.TB, runtimePath string, load loader) (*Shim, string) {
	tb.Helper()
	path := filepath.Join(shortTempDir(tb), "shim.sock")
	s, err := newShim(context.Background(), nil, path, runtimePath, load, newMetrics(), slog.New(slog.DiscardHandler))
	require.NoError(tb, err)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = s.Serve(ctx) })
	tb.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	return s, path
}

// fixed returns a loader that always returns m.
func fixed(m *pin.Matcher) loader {
	return func(context.Context) (*pin.Matcher, error) { return m, nil }
}

// dial connects a plain CRI client to the socket at path.
func dial(tb testing.TB, path string) *grpc.ClientConn {
	tb.Helper()
	conn, err := grpc.NewClient("unix://"+path,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMsgSize)))
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = conn.Close() })
	return conn
}

// testContext returns a context that ends with the test, or after a minute.
func testContext(tb testing.TB) context.Context {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	tb.Cleanup(cancel)
	return ctx
}

// pinnedByTag maps each image's first tag to its Pinned flag.
func pinnedByTag(imgs []*runtimeapi.Image) map[string]bool {
	out := map[string]bool{}
	for _, img := range imgs {
		out[strings.Join(img.GetRepoTags(), ",")] = img.GetPinned()
	}
	return out
}
