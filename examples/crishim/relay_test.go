package main

import (
	"bufio"
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

	"github.com/sandboxpin/sandboxpin/pin"
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
// them in CONTINUATION frames.
func TestRelayScriptedRuntime(t *testing.T) {
	t.Parallel()
	runtimePath := scriptedRuntime(t)
	_, shimPath := startShim(t, runtimePath, fixed(testMatcher(t)))
	images := runtimeapi.NewImageServiceClient(dial(t, shimPath))
	big := metadata.Pairs("x-big", strings.Repeat("b", 40<<10))
	for _, md := range []metadata.MD{nil, big} {
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

// pipeConn is a net.Conn that reads from a buffer and writes into another.
type pipeConn struct {
	r io.Reader
	w bytes.Buffer
}

func (c *pipeConn) Read(b []byte) (int, error)       { return c.r.Read(b) }
func (c *pipeConn) Write(b []byte) (int, error)      { return c.w.Write(b) }
func (c *pipeConn) Close() error                     { return nil }
func (c *pipeConn) LocalAddr() net.Addr              { return nil }
func (c *pipeConn) RemoteAddr() net.Addr             { return nil }
func (c *pipeConn) SetDeadline(time.Time) error      { return nil }
func (c *pipeConn) SetReadDeadline(time.Time) error  { return nil }
func (c *pipeConn) SetWriteDeadline(time.Time) error { return nil }
func (c *pipeConn) writtenFrames() ([]frameHeader, [][]byte, error) {
	return readFrames(c.w.Bytes())
}

func bufioReader(b []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(b)) }

// readFrames splits b into frames.
func readFrames(b []byte) ([]frameHeader, [][]byte, error) {
	fr := &frameReader{r: bufioReader(b)}
	var hs []frameHeader
	var ps [][]byte
	for {
		h, err := fr.header()
		if errors.Is(err, io.EOF) {
			return hs, ps, nil
		}
		if err != nil {
			return nil, nil, err
		}
		p, err := fr.payload(h)
		if err != nil {
			return nil, nil, err
		}
		hs, ps = append(hs, h), append(ps, bytes.Clone(p))
	}
}

// relayResponse runs the response pump of a relay whose client opened
// streams 1 and 3 for method, with windows as large as they go, over the
// runtime's frames in up; it returns what the client got.
func relayResponse(t *testing.T, m *pin.Matcher, method string, up []byte) (*pipeConn, error) {
	t.Helper()
	s := newWaitingShim(nil, fixed(m), slog.New(slog.NewTextHandler(io.Discard, nil)))
	s.store(m)
	down := &pipeConn{r: bytes.NewReader(nil)}
	c := s.newRelayConn(down, &pipeConn{r: bytes.NewReader(up)})
	c.connAvail = 1 << 40
	c.clientMax = 1 << 20
	c.clientMaxSeen.Store(1 << 20)
	for _, id := range []uint32{1, 3} {
		c.openStream(id, method)
		c.streams[id].avail = 1 << 40
	}
	err := c.responses()
	return down, err
}

// FuzzRelayResponse cuts a response into DATA frames as the fuzzer says,
// some padded, and passes them through the relay's response pump on
// stream 1 and again on stream 3 (the second time through the relay's
// verdict memo): the client must get, on each, exactly what patchPinned
// makes of the message (the message as it is when the patcher cannot read
// it), in frames no larger than its frame size; and random frames must
// end in an error or at the end of input, never a panic.
func FuzzRelayResponse(f *testing.F) {
	for _, sr := range seedResponses(f) {
		f.Add(sr.b, uint8(sr.kind), uint8(0), []byte{3, 0x85, 16, 1}, false) //nolint:gosec // G115: kinds are 0 to 2
	}
	f.Add([]byte{0x0a, 0x02, 0x0a, 0x00}, uint8(kindList), uint8(0), []byte{}, true)
	ms := patchMatchers(f)
	f.Fuzz(func(t *testing.T, msg []byte, kind, matcher uint8, cuts []byte, raw bool) {
		m := ms[int(matcher)%len(ms)]
		k := int(kind) % numKinds
		method := []string{methodListImages, methodStreamImages, methodImageStatus}[k]
		var up []byte
		if raw {
			up = msg // any frames at all
		} else {
			data := binary.BigEndian.AppendUint32([]byte{0}, uint32(len(msg))) //nolint:gosec // G115: fuzz input is small
			data = append(data, msg...)
			start := len(up)
			for i := 0; len(data) > 0 || i == 0; i++ {
				cut := byte(17)
				if i < len(cuts) {
					cut = cuts[i]
				}
				n := min(int(cut&0x3f)+1, len(data))
				var payload []byte
				flags := uint8(0)
				if cut&0x80 != 0 {
					flags |= flagPadded
					pad := int(cut>>6) & 1 * 3
					payload = append(append([]byte{byte(pad)}, data[:n]...), make([]byte, pad)...)
				} else {
					payload = data[:n]
				}
				up = appendFrameHeader(up, len(payload), frameData, flags, 1)
				up = append(up, payload...)
				data = data[n:]
			}
			// The same frames on stream 3.
			again := bytes.Clone(up[start:])
			for off := 0; off < len(again); {
				n := int(again[off])<<16 | int(again[off+1])<<8 | int(again[off+2])
				again[off+8] = 3
				off += frameHeaderLen + n
			}
			up = append(up, again...)
		}
		down, err := relayResponse(t, m, method, up)
		if raw {
			return // no panic, and an end
		}
		require.ErrorIs(t, err, io.EOF)
		hs, ps, err := down.writtenFrames()
		require.NoError(t, err)
		got := map[uint32][]byte{}
		for i, h := range hs {
			require.Equal(t, uint8(frameData), h.typ)
			require.LessOrEqual(t, len(ps[i]), 1<<20)
			got[h.stream] = append(got[h.stream], ps[i]...)
		}
		want, _, err := patchPinned(msg, k == kindStatus, m)
		if err != nil || m == nil {
			want = msg
		}
		wantMsg := binary.BigEndian.AppendUint32([]byte{0}, uint32(len(want))) //nolint:gosec // G115: small
		wantMsg = append(wantMsg, want...)
		require.Equal(t, wantMsg, got[1], "stream 1")
		require.Equal(t, wantMsg, got[3], "stream 3, through the memo")
		require.Len(t, got, 2)
	})
}

// FuzzRelayRequests passes random client frames, after the preface,
// through the relay's request pump: an error or the end of input, never a
// panic.
func FuzzRelayRequests(f *testing.F) {
	var hbuf bytes.Buffer
	enc := hpack.NewEncoder(&hbuf)
	_ = enc.WriteField(hpack.HeaderField{Name: ":path", Value: methodListImages})
	blk := hbuf.Bytes()
	var seed []byte
	seed = appendFrameHeader(seed, 6, frameSettings, 0, 0)
	seed = append(seed, 0, settingInitialWindowSize, 0, 1, 0, 0)
	seed = appendFrameHeader(seed, 2, frameHeaders, 0, 1)
	seed = append(seed, blk[:2]...)
	seed = appendFrameHeader(seed, len(blk)-2, frameContinuation, flagEndHeaders, 1)
	seed = append(seed, blk[2:]...)
	seed = appendWindowUpdate(seed, 0, 1000)
	seed = appendWindowUpdate(seed, 1, 1000)
	f.Add(seed)
	f.Fuzz(func(t *testing.T, b []byte) {
		s := newWaitingShim(nil, fixed(nil), slog.New(slog.NewTextHandler(io.Discard, nil)))
		up := &pipeConn{r: bytes.NewReader(nil)}
		c := s.newRelayConn(&pipeConn{r: io.MultiReader(strings.NewReader(clientPreface), bytes.NewReader(b))}, up)
		err := c.requests()
		require.Error(t, err)
		require.NoError(t, c.upW.Flush())
		// Whatever it passed on is whole frames, after the preface.
		out := up.w.Bytes()
		require.True(t, bytes.HasPrefix(out, []byte(clientPreface)))
		_, _, err = readFrames(out[len(clientPreface):])
		require.NoError(t, err)
	})
}
