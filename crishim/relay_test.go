package crishim

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestRelayFlowControl sends 10,000 images through the relay to clients
// whose windows are gRPC's static minimum (64 KiB, no growth), so that the
// relay must both grant the runtime window for what it holds and wait for
// the client's grants, with calls of every kind at once on one connection
// and calls given up half way. A client that got more than it granted
// fails the call with a flow-control error; a relay that waits wrongly
// hangs until the test's deadline.
func TestRelayFlowControl(t *testing.T) {
	t.Parallel()
	const n = 10000
	runtimePath := startFake(t, &fakeRuntime{images: benchImages(n)})
	_, shimPath := startShim(t, runtimePath, fixed(testMatcher(t)))
	for _, tc := range []struct {
		name string
		opts []grpc.DialOption
	}{
		{name: "static 64 KiB windows", opts: []grpc.DialOption{grpc.WithInitialWindowSize(65535), grpc.WithInitialConnWindowSize(65535)}},
		{name: "gRPC defaults", opts: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			conn, err := grpc.NewClient("unix://"+shimPath, append([]grpc.DialOption{
				grpc.WithTransportCredentials(insecure.NewCredentials()),
				grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMsgSize)),
			}, tc.opts...)...)
			require.NoError(t, err)
			t.Cleanup(func() { _ = conn.Close() })
			images := runtimeapi.NewImageServiceClient(conn)
			rt := runtimeapi.NewRuntimeServiceClient(conn)
			ctx := testContext(t)
			var wg sync.WaitGroup
			errs := make(chan error, 64)
			for w := range 4 {
				wg.Go(func() {
					for range 5 {
						resp, err := images.ListImages(ctx, &runtimeapi.ListImagesRequest{})
						if err != nil {
							errs <- err
							return
						}
						if imgs := resp.GetImages(); len(imgs) != n || !imgs[0].GetPinned() || imgs[1].GetPinned() {
							errs <- errors.New("ListImages: wrong answer")
							return
						}
						st, err := images.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: tagPause}})
						if err != nil || !st.GetImage().GetPinned() {
							errs <- errors.Join(errors.New("ImageStatus of the pause image"), err)
							return
						}
						if _, err := rt.Version(ctx, &runtimeapi.VersionRequest{}); err != nil {
							errs <- err
							return
						}
						// Given up half way: the relay drops the rest and
						// gives its window back, and the connection goes on.
						short, cancel := context.WithTimeout(ctx, time.Duration(w+1)*200*time.Microsecond)
						_, err = images.ListImages(short, &runtimeapi.ListImagesRequest{})
						cancel()
						if err != nil && status.Code(err) != codes.DeadlineExceeded {
							errs <- err
							return
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
		})
	}
}

// TestRelayShutdown checks that the shim stops at once when no call is
// open, telling its clients to go away first.
func TestRelayShutdown(t *testing.T) {
	t.Parallel()
	runtimePath := startFake(t, newFake())
	upstream, err := dialRuntime(runtimePath)
	require.NoError(t, err)
	t.Cleanup(func() { _ = upstream.Close() })
	s, err := newShim(context.Background(), upstream, fixed(testMatcher(t)), slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	path := filepath.Join(shortTempDir(t), "shim.sock")
	lis, err := listenUnix(path)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.serve(ctx, lis) }()

	images := runtimeapi.NewImageServiceClient(dial(t, path))
	resp, err := images.ListImages(testContext(t), &runtimeapi.ListImagesRequest{})
	require.NoError(t, err)
	assert.Equal(t, wantPinnedByTag(), pinnedByTag(resp.GetImages()))

	start := time.Now()
	cancel()
	select {
	case err := <-served:
		require.NoError(t, err)
	case <-time.After(shutdownGrace):
		t.Fatal("serve did not return")
	}
	assert.Less(t, time.Since(start), time.Second, "shutdown with no call open")
}

// scriptedRuntime is a CRI runtime written frame by frame, to send what
// grpc-go never does: padded DATA, a message cut into tiny frames, and
// header blocks continued in CONTINUATION frames. It answers ListImages
// and ImageStatus with the fake images, and reads the requests' header
// blocks with whatever CONTINUATION the client sent.
func scriptedRuntime(t *testing.T) string {
	t.Helper()
	path := filepath.Join(shortTempDir(t), "scripted.sock")
	lis, err := net.Listen("unix", path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = lis.Close() })
	list, err := proto.Marshal(&runtimeapi.ListImagesResponse{Images: newFake().images})
	require.NoError(t, err)
	statusOf, err := proto.Marshal(&runtimeapi.ImageStatusResponse{Image: newFake().images[0]})
	require.NoError(t, err)
	go func() {
		for {
			conn, err := lis.Accept()
			if err != nil {
				return
			}
			go serveScripted(conn, list, statusOf)
		}
	}()
	return path
}

func serveScripted(conn net.Conn, list, statusOf []byte) {
	defer conn.Close()
	preface := make([]byte, len(clientPreface))
	if _, err := io.ReadFull(conn, preface); err != nil {
		return
	}
	var mu sync.Mutex // the framer's writes
	fr := http2.NewFramer(conn, conn)
	fr.ReadMetaHeaders = hpack.NewDecoder(defaultHeaderSize, nil)
	var hbuf bytes.Buffer
	enc := hpack.NewEncoder(&hbuf)
	block := func(fields ...string) []byte {
		hbuf.Reset()
		for i := 0; i < len(fields); i += 2 {
			_ = enc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]})
		}
		return bytes.Clone(hbuf.Bytes())
	}
	mu.Lock()
	_ = fr.WriteSettings()
	mu.Unlock()
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return
		}
		mu.Lock()
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				_ = fr.WriteSettingsAck()
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				_ = fr.WritePing(true, f.Data)
			}
		case *http2.MetaHeadersFrame:
			id := f.StreamID
			var msg []byte
			switch f.PseudoValue("path") {
			case methodListImages:
				msg = list
			case methodImageStatus:
				msg = statusOf
			}
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, EndHeaders: true, PadLength: 7,
				BlockFragment: block(":status", "200", "content-type", "application/grpc")})
			if msg == nil {
				trailers := block("grpc-status", "12", "grpc-message", "scripted: unimplemented")
				_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, EndHeaders: true, EndStream: true, BlockFragment: trailers})
				break
			}
			// The message in frames of 1 to 13 bytes, every other padded.
			data := binary.BigEndian.AppendUint32([]byte{0}, uint32(len(msg))) //nolint:gosec // G115: small
			data = append(data, msg...)
			for i := 0; len(data) > 0; i++ {
				k := min(1+i%13, len(data))
				if i%2 == 0 {
					_ = fr.WriteDataPadded(id, false, data[:k], make([]byte, i%5))
				} else {
					_ = fr.WriteData(id, false, data[:k])
				}
				data = data[k:]
			}
			// Trailers in a HEADERS and two CONTINUATION frames.
			trailers := block("grpc-status", "0", "x-scripted", strings.Repeat("t", 40))
			a, b := len(trailers)/3, 2*len(trailers)/3
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, EndStream: true, BlockFragment: trailers[:a]})
			_ = fr.WriteContinuation(id, false, trailers[a:b])
			_ = fr.WriteContinuation(id, true, trailers[b:])
		}
		mu.Unlock()
	}
}

// TestRelayScriptedRuntime passes through the relay what the scripted
// runtime sends, and request headers large enough for grpc-go to continue
// them in CONTINUATION frames. The scripted runtime ends the connection on
// any frame x/net/http2 finds out of order.
func TestRelayScriptedRuntime(t *testing.T) {
	t.Parallel()
	runtimePath := scriptedRuntime(t)
	_, shimPath := startShim(t, runtimePath, fixed(testMatcher(t)))
	images := runtimeapi.NewImageServiceClient(dial(t, shimPath))
	big := metadata.Pairs("x-big", strings.Repeat("b", 40<<10))
	// Ten rounds: the window the relay grants the runtime for one answer
	// must not land inside the next request's header block, which the
	// scripted runtime's framer (x/net/http2) refuses: about one round in
	// a hundred did before the relay held its frames back during a block.
	var mds []metadata.MD
	for range 10 {
		mds = append(mds, nil, big)
	}
	for _, md := range mds {
		ctx := metadata.NewOutgoingContext(testContext(t), md)
		var trailer metadata.MD
		resp, err := images.ListImages(ctx, &runtimeapi.ListImagesRequest{}, grpc.Trailer(&trailer))
		require.NoError(t, err)
		assert.Equal(t, wantPinnedByTag(), pinnedByTag(resp.GetImages()))
		assert.Equal(t, []string{strings.Repeat("t", 40)}, trailer.Get("x-scripted"))

		st, err := images.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: tagPause}})
		require.NoError(t, err)
		assert.True(t, st.GetImage().GetPinned(), "ImageStatus of the pause image")

		_, err = images.PullImage(ctx, &runtimeapi.PullImageRequest{})
		assert.Equal(t, codes.Unimplemented, status.Code(err), "%v", err)
	}
}

// TestRelayContinuationFlood sends a header block that never ends: the
// relay gives up on the connection at 16 MiB rather than hold it all.
func TestRelayContinuationFlood(t *testing.T) {
	t.Parallel()
	var in []byte
	in = appendFrameHeader(in, 0, frameHeaders, 0, 1)
	chunk := make([]byte, defaultMaxFrame)
	for range maxHeaderBlock/defaultMaxFrame + 1 {
		in = appendFrameHeader(in, len(chunk), frameContinuation, 0, 1)
		in = append(in, chunk...)
	}
	s := newWaitingShim(nil, fixed(nil), slog.New(slog.NewTextHandler(io.Discard, nil)))
	c := s.newRelayConn(&pipeConn{r: io.MultiReader(strings.NewReader(clientPreface), bytes.NewReader(in))}, &pipeConn{r: bytes.NewReader(nil)})
	err := c.requests()
	require.ErrorIs(t, err, errH2)
	assert.Contains(t, err.Error(), "header block on stream 1 over 16777216 bytes")
}
