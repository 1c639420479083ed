package crishim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sandboxpin/sandboxpin/pin"
)

// Tags of the fake runtime's images.
const (
	tagPause  = "registry.k8s.io/pause:3.10.1"       // pinned by the alias spelling the node configures
	tagBusy   = "docker.io/library/busybox:1.36"     // pinned by nothing
	tagOwn    = "docker.io/library/own:1"            // pinned by the runtime itself, by no rule
	tagInfra  = "registry.example.com/infra/agent:1" // pinned by the --pin glob
	idPattern = "sha256:%064x"
)

// fakeImages are the fake runtime's images; wantPinned is what the shim
// answers for each.
var fakeImages = []struct {
	tag        string
	runtime    bool // Pinned as the runtime reports it
	wantPinned bool // Pinned as the shim reports it
}{
	{tag: tagPause, runtime: false, wantPinned: true},
	{tag: tagBusy, runtime: false, wantPinned: false},
	{tag: tagOwn, runtime: true, wantPinned: true},
	{tag: tagInfra, runtime: false, wantPinned: true},
}

// newFake returns a fake runtime holding fakeImages.
func newFake() *fakeRuntime {
	f := &fakeRuntime{}
	for i, img := range fakeImages {
		f.images = append(f.images, &runtimeapi.Image{
			Id: fmt.Sprintf(idPattern, i+1), RepoTags: []string{img.tag}, Size: uint64(1000 + i), Pinned: img.runtime,
		})
	}
	return f
}

// testMatcher pins what a node configured with the alias spelling of the
// pause image pins, plus a --pin glob.
func testMatcher(t testing.TB) *pin.Matcher {
	t.Helper()
	node, err := pin.Compile([]string{"k8s.gcr.io/pause:3.10.1"}, pin.WithSource("node"))
	require.NoError(t, err)
	extra, err := pin.Compile([]string{"registry.example.com/infra/*"}, pin.WithSource("--pin"))
	require.NoError(t, err)
	return pin.Join(node, extra)
}

func wantPinnedByTag() map[string]bool {
	want := map[string]bool{}
	for _, img := range fakeImages {
		want[img.tag] = img.wantPinned
	}
	return want
}

func TestShimImages(t *testing.T) {
	t.Parallel()
	runtimePath := startFake(t, newFake())
	_, shimPath := startShim(t, runtimePath, fixed(testMatcher(t)))
	images := runtimeapi.NewImageServiceClient(dial(t, shimPath))
	direct := runtimeapi.NewImageServiceClient(dial(t, runtimePath))
	ctx := testContext(t)

	t.Run("ListImages", func(t *testing.T) {
		t.Parallel()
		resp, err := images.ListImages(ctx, &runtimeapi.ListImagesRequest{})
		require.NoError(t, err)
		assert.Equal(t, wantPinnedByTag(), pinnedByTag(resp.GetImages()))
		// Everything but Pinned is what the runtime said.
		raw, err := direct.ListImages(ctx, &runtimeapi.ListImagesRequest{})
		require.NoError(t, err)
		for i, img := range raw.GetImages() {
			img.Pinned = fakeImages[i].wantPinned
		}
		assert.True(t, proto.Equal(raw, resp), "ListImages through the shim = %v, want %v", resp, raw)
	})

	t.Run("StreamImages", func(t *testing.T) {
		t.Parallel()
		stream, err := images.StreamImages(ctx, &runtimeapi.StreamImagesRequest{})
		require.NoError(t, err)
		var got []*runtimeapi.Image
		messages := 0
		for {
			resp, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err)
			messages++
			got = append(got, resp.GetImages()...)
		}
		assert.Equal(t, 2, messages, "StreamImages messages")
		assert.Equal(t, wantPinnedByTag(), pinnedByTag(got))
	})

	for _, img := range fakeImages {
		t.Run("ImageStatus/"+img.tag, func(t *testing.T) {
			t.Parallel()
			var hdr metadata.MD
			resp, err := images.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: img.tag}}, grpc.Header(&hdr))
			require.NoError(t, err)
			assert.Equal(t, img.wantPinned, resp.GetImage().GetPinned(), "ImageStatus(%q).Pinned", img.tag)
			assert.Equal(t, []string{"status"}, hdr.Get("x-fake-header"), "header from the runtime")
		})
	}

	t.Run("ImageStatus/nil image", func(t *testing.T) {
		t.Parallel()
		resp, err := images.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: "absent:nil"}})
		require.NoError(t, err)
		assert.Nil(t, resp.GetImage())
	})

	t.Run("ImageStatus/error status passes", func(t *testing.T) {
		t.Parallel()
		_, err := images.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: "nope:1"}})
		st, ok := status.FromError(err)
		require.True(t, ok, "error %v has no status", err)
		assert.Equal(t, codes.NotFound, st.Code())
		assert.Equal(t, `image "nope:1" not found`, st.Message())
	})
}

// TestShimTransparent checks that what the shim does not change passes byte
// for byte: responses with nothing to pin, other methods, methods this
// cri-api does not know (unary and streaming), metadata and statuses.
func TestShimTransparent(t *testing.T) {
	t.Parallel()
	runtimePath := startFake(t, newFake())
	_, shimPath := startShim(t, runtimePath, fixed(nil))
	viaShim, direct := dial(t, shimPath), dial(t, runtimePath)
	ctx := testContext(t)
	raw := grpc.ForceCodecV2(rawCodec{})

	tests := []struct {
		name   string
		method string // full method name
		req    []byte // request message, encoded
	}{
		{name: "ListImages with nothing to pin", method: methodListImages, req: nil},
		{name: "Version", method: runtimeapi.RuntimeService_Version_FullMethodName, req: mustMarshal(t, &runtimeapi.VersionRequest{Version: "v1"})},
		{name: "ImageStatus", method: methodImageStatus, req: mustMarshal(t, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: tagPause}})},
		{name: "unknown method", method: futureMethod, req: []byte("not even protobuf")},
		{name: "unknown service", method: "/runtime.v2.Future/Call", req: []byte{0, 1, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			call := func(conn *grpc.ClientConn) ([]byte, metadata.MD, metadata.MD) {
				var hdr, trl metadata.MD
				out := new(rawFrame)
				octx := metadata.AppendToOutgoingContext(ctx, "x-echo", tt.name)
				err := conn.Invoke(octx, tt.method, &rawFrame{data: tt.req}, out, raw, grpc.Header(&hdr), grpc.Trailer(&trl))
				require.NoError(t, err, "%s", tt.method)
				return out.data, hdr.Copy(), trl.Copy()
			}
			wantData, wantHdr, wantTrl := call(direct)
			gotData, gotHdr, gotTrl := call(viaShim)
			assert.Equal(t, wantData, gotData, "response bytes of %s", tt.method)
			for _, k := range []string{"x-echo", "x-fake-header"} {
				assert.Equal(t, wantHdr.Get(k), gotHdr.Get(k), "header %s", k)
			}
			assert.Equal(t, wantTrl.Get("x-echo-trailer"), gotTrl.Get("x-echo-trailer"), "trailer")
		})
	}

	t.Run("unknown bidi stream", func(t *testing.T) {
		t.Parallel()
		stream, err := viaShim.NewStream(ctx, &proxyDesc, futureMethod, raw)
		require.NoError(t, err)
		for _, msg := range []string{"a", "bb", "ccc"} {
			require.NoError(t, stream.SendMsg(&rawFrame{data: []byte(msg)}))
			got := new(rawFrame)
			require.NoError(t, stream.RecvMsg(got))
			assert.Equal(t, futureMethod+":"+msg, string(got.data))
		}
		require.NoError(t, stream.SendMsg(&rawFrame{data: []byte("fail")}))
		err = stream.RecvMsg(new(rawFrame))
		assert.Equal(t, codes.FailedPrecondition, status.Code(err), "status of a failed stream: %v", err)
	})
}

// TestShimStreaming checks the calls of the kubelet's streaming: Exec,
// Attach and PortForward answer the runtime's own streaming URL, which the
// kubelet then connects to (the shim is not on that path); and the events
// of GetContainerEvents, a stream that does not end, arrive as the runtime
// sends them.
func TestShimStreaming(t *testing.T) {
	t.Parallel()
	runtimePath := startFake(t, newFake())
	_, shimPath := startShim(t, runtimePath, fixed(testMatcher(t)))
	rt := runtimeapi.NewRuntimeServiceClient(dial(t, shimPath))
	ctx := testContext(t)

	exec, err := rt.Exec(ctx, &runtimeapi.ExecRequest{ContainerId: "c1", Cmd: []string{"sh"}, Stdout: true})
	require.NoError(t, err)
	assert.Equal(t, streamingURL("exec", "c1"), exec.GetUrl(), "Exec")
	attach, err := rt.Attach(ctx, &runtimeapi.AttachRequest{ContainerId: "c2", Stdout: true})
	require.NoError(t, err)
	assert.Equal(t, streamingURL("attach", "c2"), attach.GetUrl(), "Attach")
	pf, err := rt.PortForward(ctx, &runtimeapi.PortForwardRequest{PodSandboxId: "s1", Port: []int32{80}})
	require.NoError(t, err)
	assert.Equal(t, streamingURL("portforward", "s1"), pf.GetUrl(), "PortForward")

	events, err := rt.GetContainerEvents(ctx, &runtimeapi.GetEventsRequest{})
	require.NoError(t, err)
	for i := range fakeEvents { // the runtime still holds the stream open
		ev, err := events.Recv()
		require.NoError(t, err, "event %d", i)
		assert.Equal(t, fmt.Sprint(i), ev.GetContainerId())
	}
}

func mustMarshal(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	require.NoError(t, err)
	return b
}

// TestShimReload checks that reload swaps the matcher and that a failing
// reload keeps the previous one.
func TestShimReload(t *testing.T) {
	t.Parallel()
	runtimePath := startFake(t, newFake())
	busybox, err := pin.Compile([]string{"busybox:1.36"})
	require.NoError(t, err)
	steps := []struct {
		name       string
		m          *pin.Matcher // what the loader returns
		err        error        // or the loader's error
		wantPinned bool         // busybox pinned after the reload
	}{
		{name: "initial: nothing", m: nil, wantPinned: false},
		{name: "reload: busybox", m: busybox, wantPinned: true},
		{name: "failed reload keeps busybox", err: errors.New("config.toml:3: bad"), wantPinned: true},
		{name: "reload: nothing", m: nil, wantPinned: false},
	}
	i := 0
	load := func(context.Context) (*pin.Matcher, error) {
		st := steps[i]
		return st.m, st.err
	}
	s, shimPath := startShim(t, runtimePath, load)
	images := runtimeapi.NewImageServiceClient(dial(t, shimPath))
	ctx := testContext(t)
	for i = range steps { // sequential: each step depends on the one before
		if i > 0 {
			err := s.Reload(ctx)
			if steps[i].err != nil {
				require.ErrorIs(t, err, steps[i].err, steps[i].name)
			} else {
				require.NoError(t, err, steps[i].name)
			}
		}
		resp, err := images.ListImages(ctx, &runtimeapi.ListImagesRequest{})
		require.NoError(t, err)
		assert.Equal(t, steps[i].wantPinned, pinnedByTag(resp.GetImages())[tagBusy], "%s: busybox pinned", steps[i].name)
	}
}

// benchImages returns n canonical images with a tag and a repo digest each;
// the first is the pause image, unpinned, so the shim patches every answer
// (its worst case).
func benchImages(n int) []*runtimeapi.Image {
	imgs := make([]*runtimeapi.Image, n)
	for i := range imgs {
		repo := fmt.Sprintf("registry.example.com/team%d/app%d", i%10, i)
		tag := repo + ":v1." + fmt.Sprint(i)
		if i == 0 {
			repo, tag = "registry.k8s.io/pause", tagPause
		}
		imgs[i] = &runtimeapi.Image{
			Id:          fmt.Sprintf(idPattern, i+1),
			RepoTags:    []string{tag},
			RepoDigests: []string{fmt.Sprintf("%s@"+idPattern, repo, i+100000)},
			Size:        uint64(1 << 20),
			Spec:        &runtimeapi.ImageSpec{Image: tag},
		}
	}
	return imgs
}
