package crishim

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sandboxpin/sandboxpin/criinfo"
	"github.com/sandboxpin/sandboxpin/criinfo/cri"
	"github.com/sandboxpin/sandboxpin/criinfo/cri/fakecri"
	"github.com/sandboxpin/sandboxpin/internal/runtimetest"
	"github.com/sandboxpin/sandboxpin/pin"
)

// The shim in front of a hostile runtime (criinfo/cri/fakecri): Status
// with Info 100,000 levels deep or of 15 to 20 MiB, ListImages at and over
// the 16 MiB limit. The first client's call ends with an error or a bounded
// answer, and meanwhile a second client is served as usual.

// hostileSandbox is the sandbox image of the hostile runtimes: stored, not
// pinned by the runtime, pinned by the shim's rules.
const hostileSandbox = "registry.k8s.io/pause:3.10.1"

// hostileDeadline bounds each call: a 20 MiB answer takes about a second on
// a loaded 2-core machine, a few under -race.
const hostileDeadline = 30 * time.Second

// hostileGrace is how long after hostileDeadline a call may still run
// before the test gives up on it: code that ignores its context hangs.
const hostileGrace = 10 * time.Second

// sandboxImage is hostileSandbox as the runtime stores it.
var sandboxImage = &runtimeapi.Image{Id: "sha256:" + strings.Repeat("a", 64), RepoTags: []string{hostileSandbox}}

// hostileImages returns images whose ListImagesResponse is size bytes as the
// runtime sends it, the sandbox image first; the shim's pin adds 2 bytes.
func hostileImages(size int) []*runtimeapi.Image {
	return imagesOfSize(sandboxImage, size)
}

// imagesOfSize returns images whose ListImagesResponse is size bytes, first
// first.
func imagesOfSize(first *runtimeapi.Image, size int) []*runtimeapi.Image {
	rest := size - fakecri.ListSize([]*runtimeapi.Image{first})
	return append([]*runtimeapi.Image{first}, fakecri.ImagesOfSize(rest)...)
}

// hostileAnswers are the runtimes of the shim tests and the call the first
// client makes.
var hostileAnswers = []struct {
	name   string
	info   map[string]string   // StatusResponse.Info
	images []*runtimeapi.Image // ListImages
	method string              // the first client's call: MethodStatus or MethodListImages
	// wantCode is the gRPC code of the first client's call.
	wantCode codes.Code
	// wantInfoErr is the sentinel cri.Query through the shim returns, for
	// the Status answers.
	wantInfoErr error
	// maxAlloc bounds the bytes the first client's call allocates in this
	// process: the shim's and the client's part (the fake runtime
	// marshalled its answer in Serve). An answer the client reads is held
	// four times its size: the shim's received message, with the pin
	// spliced in without a copy; the client's receive buffer; the decoded
	// answer, strings and structs, about twice the wire size. The bound is
	// eight times, plus 32 MiB for gRPC's buffers: fresh ones when gRPC's
	// pools miss, as they often do under -race, where one CI run measured
	// 121 MiB for the 16 MiB list (7.5 times) against 61 MiB without
	// -race. An answer over 16 MiB is never held: the shim's gRPC reads
	// its 5-byte prefix and refuses it; 8 MiB is for buffers. Measured:
	// 15 MiB Info 46 MiB, the 16 MiB list 61 MiB, answers over 16 MiB 0 to
	// 1 MiB.
	maxAlloc uint64
}{
	{
		name:        "Info 100,000 levels deep",
		info:        map[string]string{"config": fakecri.DeepObject(100_000)},
		method:      fakecri.MethodStatus,
		wantInfoErr: criinfo.ErrTooDeep,
		maxAlloc:    16 << 20, // 600 KB
	},
	{
		name:     "15 MiB of Info",
		info:     withConfig(fakecri.FillerInfo(15<<20, 4<<10), `{"sandboxImage":"`+hostileSandbox+`"}`),
		method:   fakecri.MethodStatus,
		maxAlloc: 8*15<<20 + 32<<20,
	},
	{
		name:        "20 MiB of Info",
		info:        fakecri.FillerInfo(20<<20, 4<<10),
		method:      fakecri.MethodStatus,
		wantCode:    codes.ResourceExhausted,
		wantInfoErr: criinfo.ErrTooLarge,
		maxAlloc:    8 << 20,
	},
	{
		name:     "ListImages at gRPC's default limit",
		images:   hostileImages(4 << 20),
		method:   fakecri.MethodListImages,
		maxAlloc: 8*4<<20 + 32<<20,
	},
	{
		name:     "ListImages 64 bytes under 16 MiB",
		images:   hostileImages(maxMsgSize - 64),
		method:   fakecri.MethodListImages,
		maxAlloc: 8*16<<20 + 32<<20,
	},
	{
		// The shim's pin makes the answer 2 bytes larger than the client
		// accepts, and the client refuses it: the sandbox image is never
		// seen unpinned. The runtime's encoding and the shim's read of it
		// are 16 MiB each; the rest (seen up to 1 MiB under -race and a
		// loaded machine) is gRPC's and the race detector's bookkeeping.
		name:     "ListImages of exactly 16 MiB",
		images:   hostileImages(maxMsgSize),
		method:   fakecri.MethodListImages,
		wantCode: codes.ResourceExhausted,
		maxAlloc: 16<<20 + 16<<20 + 4<<20,
	},
	{
		name:     "ListImages of 20 MiB",
		images:   hostileImages(20 << 20),
		method:   fakecri.MethodListImages,
		wantCode: codes.ResourceExhausted,
		maxAlloc: 8 << 20,
	},
}

// withConfig returns info with "config" set to config.
func withConfig(info map[string]string, config string) map[string]string {
	info["config"] = config
	return info
}

// within runs f and fails the test when f has not returned hostileGrace
// after hostileDeadline: f hangs.
func within[T any](t *testing.T, f func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- f() }()
	select {
	case v := <-done:
		return v
	case <-time.After(hostileDeadline + hostileGrace):
		t.Fatalf("still running %v after its context's deadline", hostileGrace)
		panic("unreachable")
	}
}

// startHostile serves a hostile runtime with info and images, and a shim in
// front of it that pins hostileSandbox; it returns the shim's socket.
func startHostile(t *testing.T, info map[string]string, images []*runtimeapi.Image) string {
	t.Helper()
	if images == nil {
		images = []*runtimeapi.Image{sandboxImage}
	}
	runtimePath := fakecri.Serve(t, &fakecri.Runtime{RuntimeName: "containerd", RuntimeVersion: "1.7.35", Info: info, Images: images})
	m, err := pin.Compile([]string{hostileSandbox})
	require.NoError(t, err)
	_, shimPath := startShim(t, runtimePath, fixed(m))
	return shimPath
}

// hostileCall is the first client's call, started and not yet read.
type hostileCall struct {
	stream grpc.ClientStream
	reply  proto.Message
	cancel context.CancelFunc
}

// startCall sends the request of method on conn and returns before
// reading the answer: until finish reads it, the client grants the shim no
// window on the stream beyond the first 64 KiB, so the answer stays on the
// way, held by the shim or the runtime.
func startCall(t *testing.T, conn *grpc.ClientConn, method string) *hostileCall {
	t.Helper()
	var (
		path     string
		req      proto.Message
		reply    proto.Message
		ctx, end = context.WithTimeout(context.Background(), hostileDeadline)
	)
	switch method {
	case fakecri.MethodStatus:
		path, req, reply = runtimeapi.RuntimeService_Status_FullMethodName, &runtimeapi.StatusRequest{Verbose: true}, &runtimeapi.StatusResponse{}
	default:
		path, req, reply = runtimeapi.ImageService_ListImages_FullMethodName, &runtimeapi.ListImagesRequest{}, &runtimeapi.ListImagesResponse{}
	}
	stream, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, path)
	require.NoError(t, err)
	require.NoError(t, stream.SendMsg(req))
	require.NoError(t, stream.CloseSend())
	return &hostileCall{stream: stream, reply: reply, cancel: end}
}

// finish reads the answer of c.
func (c *hostileCall) finish(t *testing.T) (proto.Message, error) {
	t.Helper()
	defer c.cancel()
	err := within(t, func() error { return c.stream.RecvMsg(c.reply) })
	return c.reply, err
}

// serveOthers makes calls of a second client while the first one's answer
// is on the way: each must succeed within callTimeout.
func serveOthers(t *testing.T, conn *grpc.ClientConn) {
	t.Helper()
	rs, is := runtimeapi.NewRuntimeServiceClient(conn), runtimeapi.NewImageServiceClient(conn)
	for i := range 5 {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		v, err := rs.Version(ctx, &runtimeapi.VersionRequest{})
		if assert.NoError(t, err, "Version %d of the second client", i) {
			assert.Equal(t, "containerd", v.GetRuntimeName())
		}
		st, err := is.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: hostileSandbox}})
		if assert.NoError(t, err, "ImageStatus %d of the second client", i) {
			assert.True(t, st.GetImage().GetPinned(), "the shim pins the sandbox image")
		}
		cancel()
	}
}

func TestHostileRuntimeShim(t *testing.T) {
	t.Parallel()
	for _, tt := range hostileAnswers {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			shimPath := startHostile(t, tt.info, tt.images)
			first, second := dial(t, shimPath), dial(t, shimPath)
			call := startCall(t, first, tt.method)
			serveOthers(t, second)
			start := time.Now()
			reply, err := call.finish(t)
			t.Logf("the first client's answer took %v after the others' calls: %v", time.Since(start).Round(time.Millisecond), err)
			assert.Equal(t, tt.wantCode, status.Code(err), "error: %v", err)
			if err == nil {
				switch r := reply.(type) {
				case *runtimeapi.StatusResponse:
					assert.Equal(t, tt.info, r.GetInfo(), "the Info passes unchanged")
				case *runtimeapi.ListImagesResponse:
					require.Len(t, r.GetImages(), len(tt.images))
					assert.True(t, r.GetImages()[0].GetPinned(), "the shim pins the sandbox image")
					assert.False(t, r.GetImages()[1].GetPinned())
				}
			} else {
				assert.Contains(t, status.Convert(err).Message(), "larger than max")
			}
			// The second client is still served after the first's answer.
			serveOthers(t, second)

			if tt.method != fakecri.MethodStatus {
				return
			}
			info, err := within(t, func() infoResult {
				ctx, cancel := context.WithTimeout(context.Background(), hostileDeadline)
				defer cancel()
				info, err := cri.Query(ctx, "unix://"+shimPath)
				return infoResult{info, err}
			}).get()
			require.ErrorIs(t, err, tt.wantInfoErr)
			if err == nil {
				assert.Equal(t, hostileSandbox, info.SandboxImage)
			}
		})
	}
}

// infoResult is what cri.Query returned.
type infoResult struct {
	info criinfo.Info
	err  error
}

func (r infoResult) get() (criinfo.Info, error) { return r.info, r.err }

// TestHostileRuntimeShimMemory measures what one hostile answer through the
// shim allocates: the runtime's, the shim's and the client's part, all in
// this process. It does not run in parallel: the figures are the process's.
func TestHostileRuntimeShimMemory(t *testing.T) {
	for _, tt := range hostileAnswers {
		t.Run(tt.name, func(t *testing.T) {
			shimPath := startHostile(t, tt.info, tt.images)
			conn := dial(t, shimPath)
			var err error
			a := fakecri.MeasureAlloc(func() {
				_, err = startCall(t, conn, tt.method).finish(t)
			})
			t.Logf("allocated %d MiB, heap peak +%d MiB: %v", a.Total>>20, a.PeakHeap>>20, err)
			assert.Equal(t, tt.wantCode, status.Code(err))
			assert.LessOrEqual(t, a.Total, tt.maxAlloc, "allocated %d MiB, bound %d MiB", a.Total>>20, tt.maxAlloc>>20)
		})
	}
}

// TestHostileRuntimeShimStart starts the shim in front of a runtime whose
// own Info is hostile: the shim resolves the node with it, so it must
// refuse to start (exit 2) with a log line that names the problem.
func TestHostileRuntimeShimStart(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		info    map[string]string // StatusResponse.Info
		wantLog string            // in the log's error
	}{
		{name: "Info 100,000 levels deep", info: map[string]string{"config": fakecri.DeepObject(100_000)}, wantLog: "runtime info nested too deeply"},
		{name: "20 MiB of Info", info: fakecri.FillerInfo(20<<20, 4<<10), wantLog: "runtime info too large"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			runtimePath := fakecri.Serve(t, &fakecri.Runtime{RuntimeName: "containerd", RuntimeVersion: "1.7.35", Info: tt.info})
			o := Options{
				Listen:          "unix://" + filepath.Join(shortTempDir(t), "shim.sock"),
				RuntimeEndpoint: "unix://" + runtimePath,
				Node:            nodeOptions(t.TempDir()),
			}
			log := &runtimetest.SyncBuffer{}
			code := within(t, func() int {
				ctx, cancel := context.WithTimeout(context.Background(), hostileDeadline)
				defer cancel()
				return runShim(ctx, o, make(chan os.Signal), log)
			})
			assert.Equal(t, exitUsage, code, "log:\n%.2000s", log)
			assert.Contains(t, log.String(), "msg=\"cannot start\"")
			assert.Contains(t, log.String(), tt.wantLog)
			assert.Less(t, len(log.String()), 1024, "the log does not quote the runtime's answer")
		})
	}
}

// TestMessageLimits calls a runtime directly and through the shim with
// answers and a request near the limits, as the kubelet does (its client
// takes answers up to 16 MiB and sends requests of any size), and checks
// that the shim answers as the runtime does, with one difference: an
// answer that fits only without the pin the shim adds fails with
// ResourceExhausted rather than arrive with the sandbox image unpinned.
// The runtime takes requests up to gRPC's default 4 MiB.
func TestMessageLimits(t *testing.T) {
	t.Parallel()
	pinned := proto.Clone(sandboxImage).(*runtimeapi.Image) //nolint:forcetypeassert // a clone has the type of its original
	pinned.Pinned = true
	tests := []struct {
		name      string
		images    []*runtimeapi.Image // ListImages
		request   int                 // bytes of the request's Auth, 0 for ListImages
		direct    codes.Code          // what the client gets directly
		shim      codes.Code          // and through the shim
		sameError bool                // the shim's error is the client's own, word for word
	}{
		{name: "answer 64 bytes under 16 MiB", images: hostileImages(maxMsgSize - 64), direct: codes.OK, shim: codes.OK},
		{name: "answer of 16 MiB, the pin makes it 16 MiB + 2", images: hostileImages(maxMsgSize), direct: codes.OK, shim: codes.ResourceExhausted},
		{name: "answer of 16 MiB, pinned by the runtime", images: imagesOfSize(pinned, maxMsgSize), direct: codes.OK, shim: codes.OK},
		{name: "answer of 16 MiB + 1", images: hostileImages(maxMsgSize + 1), direct: codes.ResourceExhausted, shim: codes.ResourceExhausted, sameError: true},
		{name: "request over the runtime's 4 MiB", images: hostileImages(1 << 10), request: 5 << 20, direct: codes.ResourceExhausted, shim: codes.ResourceExhausted, sameError: true},
	}
	m, err := pin.Compile([]string{hostileSandbox})
	require.NoError(t, err)
	for _, tt := range tests { // sequential: each holds tens of MiB
		runtimePath := fakecri.Serve(t, &fakecri.Runtime{RuntimeName: "containerd", RuntimeVersion: "1.7.35", Images: tt.images})
		_, shimPath := startShim(t, runtimePath, fixed(m))
		call := func(path string) (*runtimeapi.ListImagesResponse, error) {
			ctx, cancel := context.WithTimeout(context.Background(), hostileDeadline)
			defer cancel()
			c := runtimeapi.NewImageServiceClient(dial(t, path))
			if tt.request > 0 {
				_, err := c.PullImage(ctx, &runtimeapi.PullImageRequest{Auth: &runtimeapi.AuthConfig{Auth: strings.Repeat("a", tt.request)}})
				return nil, err
			}
			return c.ListImages(ctx, &runtimeapi.ListImagesRequest{})
		}
		direct, derr := call(runtimePath)
		assert.Equal(t, tt.direct, status.Code(derr), "%s: directly: %v", tt.name, derr)
		shim, serr := call(shimPath)
		assert.Equal(t, tt.shim, status.Code(serr), "%s: through the shim: %v", tt.name, serr)
		if tt.sameError {
			assert.Equal(t, status.Convert(derr).Message(), status.Convert(serr).Message(), tt.name)
		}
		if serr == nil && derr == nil {
			require.Len(t, shim.GetImages(), len(direct.GetImages()), tt.name)
			assert.True(t, shim.GetImages()[0].GetPinned(), "%s: the sandbox image through the shim", tt.name)
		}
		t.Logf("%s: directly %v, through the shim %v", tt.name, derr, serr)
	}
}
