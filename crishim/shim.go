package crishim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sandboxpin/sandboxpin/pin"
)

// maxMsgSize is the largest answer the shim takes from the runtime: 16 MiB,
// as the kubelet (k8s.io/cri-client v0.37.2 pkg/utils.go maxMsgSize) and
// crictl take, so that a larger one fails as it would directly; ListImages
// on a node with thousands of images exceeds gRPC's 4 MiB default. What the
// shim sends has no limit of its own: it is what it took, plus the pins.
const maxMsgSize = 16 << 20

// maxRequestSize is the largest request the shim takes from a client: 80
// MiB, CRI-O's default (pkg/config/config.go defaultGRPCMaxMsgSize at
// v1.36.3), the largest of the runtimes' (containerd v2.4.2 and cri-dockerd
// v0.4.4 take 16 MiB), so that the runtime, not the shim, refuses a
// request it would refuse directly.
const maxRequestSize = 80 << 20

// reconnectMax is the longest the shim waits between attempts to reconnect
// to a runtime that went away; calls in the meantime fail with Unavailable.
const reconnectMax = time.Second

// shutdownGrace is how long a shutdown waits for calls in flight before it
// cuts them off. Streams such as GetContainerEvents never end by themselves.
const shutdownGrace = 5 * time.Second

// The methods whose responses carry images, and so a Pinned flag to correct.
// StreamImages is cri-api v0.36's streaming ListImages (feature gate
// CRIListStreaming).
const (
	methodListImages   = runtimeapi.ImageService_ListImages_FullMethodName
	methodImageStatus  = runtimeapi.ImageService_ImageStatus_FullMethodName
	methodStreamImages = runtimeapi.ImageService_StreamImages_FullMethodName
)

// proxyDesc describes every forwarded call as a bidirectional stream, which
// on the wire carries unary, client-, server- and bidi-streaming calls alike.
var proxyDesc = grpc.StreamDesc{ServerStreams: true, ClientStreams: true}

// loader builds the matcher the shim pins with; it runs at start and on
// every reload.
type loader func(ctx context.Context) (*pin.Matcher, error)

// hopTuning sizes the gRPC transport of the shim's two connections: the
// one to the runtime (where the big answers arrive) and the shim's server
// (where they leave). A zero field keeps gRPC's default.
type hopTuning struct {
	// window is the flow-control window, per stream and per connection,
	// in which the runtime may send before the shim acknowledges. gRPC's
	// default starts at 64 KiB and grows by bandwidth-delay estimation.
	window int32
	// readBuf and writeBuf are the transport's socket buffers (default
	// 32 KiB each).
	readBuf, writeBuf int
}

// defaultTuning is the shim's tuning; TestHopTuning measures what each
// part buys. A static window of the largest message lets the runtime send
// a whole ListImages answer without waiting for a window update; larger
// socket buffers mean fewer read and write calls for it.
func defaultTuning() hopTuning {
	return hopTuning{window: maxMsgSize, readBuf: 256 << 10, writeBuf: 256 << 10}
}

func (t hopTuning) dialOptions() []grpc.DialOption {
	var o []grpc.DialOption
	if t.window > 0 {
		o = append(o, grpc.WithStaticStreamWindowSize(t.window), grpc.WithStaticConnWindowSize(t.window))
	}
	if t.readBuf > 0 {
		o = append(o, grpc.WithReadBufferSize(t.readBuf))
	}
	if t.writeBuf > 0 {
		o = append(o, grpc.WithWriteBufferSize(t.writeBuf))
	}
	return o
}

func (t hopTuning) serverOptions() []grpc.ServerOption {
	var o []grpc.ServerOption
	if t.window > 0 {
		o = append(o, grpc.StaticStreamWindowSize(t.window), grpc.StaticConnWindowSize(t.window))
	}
	if t.readBuf > 0 {
		o = append(o, grpc.ReadBufferSize(t.readBuf))
	}
	if t.writeBuf > 0 {
		o = append(o, grpc.WriteBufferSize(t.writeBuf))
	}
	return o
}

// dialRuntime opens a pass-through connection to the runtime's socket path.
// gRPC connects lazily: a runtime that is not up yet fails the first call,
// not the dial.
func dialRuntime(path string) (*grpc.ClientConn, error) {
	opts := append([]grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(wireCodec{}), grpc.MaxCallRecvMsgSize(maxMsgSize)),
		// The shim holds its connection to the runtime for good: gRPC's
		// idle timeout (30 minutes without a call) would close it, and
		// count a reconnect at the next call.
		grpc.WithIdleTimeout(0),
		// Reconnect soon after a runtime restart: gRPC's default backoff
		// grows to 2 minutes, during which every call would fail.
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: reconnectMax},
			MinConnectTimeout: 5 * time.Second,
		}),
	}, defaultTuning().dialOptions()...)
	conn, err := grpc.NewClient("unix://"+path, opts...)
	if err != nil {
		return nil, fmt.Errorf("runtime connection to %q: %w", path, err)
	}
	return conn, nil
}

// newServer returns the shim's gRPC server: every call goes to proxy.
func (s *Shim) newServer() *grpc.Server {
	return grpc.NewServer(append([]grpc.ServerOption{
		grpc.ForceServerCodecV2(wireCodec{}),
		grpc.UnknownServiceHandler(s.proxy),
		grpc.MaxRecvMsgSize(maxRequestSize),
	}, defaultTuning().serverOptions()...)...)
}

// watchRuntime follows the state of the connection to the runtime until
// ctx ends, logs when it is lost and found again, and counts each return
// (sandboxpin_shim_runtime_reconnects_total): ready again after a failed
// dial or after the connection ended.
func (s *Shim) watchRuntime(ctx context.Context) {
	lost := false
	for st := s.upstream.GetState(); st != connectivity.Shutdown; {
		if st == connectivity.Ready && lost {
			lost = false
			s.metrics.reconnect()
			s.log.Info("the runtime answers again", "runtime", s.runtimePath)
		}
		if !s.upstream.WaitForStateChange(ctx, st) {
			return
		}
		next := s.upstream.GetState()
		// A connection that leaves Ready has ended, even when it is Ready
		// again by the time GetState looks.
		if !lost && next != connectivity.Shutdown && (st == connectivity.Ready || next == connectivity.TransientFailure) {
			lost = true
			s.log.Warn("lost the runtime: calls fail with Unavailable until it is back", "runtime", s.runtimePath)
		}
		st = next
	}
}

func (s *Shim) store(m *pin.Matcher) {
	s.pins.Store(m)
	s.loaded.Store(true)
}

// Reload resolves the node again and swaps in the new rules. When that
// fails, the previous rules stay and the error says why.
func (s *Shim) Reload(ctx context.Context) error {
	m, err := s.load(ctx)
	if err != nil {
		if !s.loaded.Load() {
			s.metrics.reload(reloadFailed)
			return fmt.Errorf("load pin rules (none loaded yet): %w", err)
		}
		s.metrics.reload(reloadKept)
		return fmt.Errorf("reload pin rules (keeping the previous ones): %w", err)
	}
	s.store(m)
	s.metrics.reload(reloadOK)
	return nil
}

// awaitRules reloads every interval until a load succeeds or ctx ends, and
// logs the first failure and every tenth after it.
func (s *Shim) awaitRules(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for failures := 1; !s.loaded.Load(); failures++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if s.loaded.Load() { // a SIGHUP got there first
			return
		}
		err := s.Reload(ctx)
		switch {
		case err == nil:
			s.log.Info("the runtime answers: pin rules loaded, image calls served again")
			return
		case failures%10 == 0:
			s.log.Warn("still waiting for the runtime", "attempts", failures, "err", err)
		}
	}
}

// errNotReady is the status of an image call before the shim has rules:
// answering it unpinned could let the kubelet's image GC remove the pause
// image, so the kubelet is told to retry, as when the runtime is down.
var errNotReady = status.Error(codes.Unavailable, "crishim: no pin rules loaded yet (the runtime has not been reachable since the shim started); retry")

// proxy is the handler of every call: it opens the same method on the
// runtime and copies messages both ways, headers and trailers included,
// rewriting only the responses that carry images. A status from the runtime
// is returned as it is.
func (s *Shim) proxy(_ any, down grpc.ServerStream) (err error) {
	method, ok := grpc.MethodFromServerStream(down)
	if !ok {
		return status.Error(codes.Internal, "crishim: call without a method name")
	}
	defer func() { s.metrics.call(methodID(method), status.Code(err)) }()
	if !s.loaded.Load() {
		switch method {
		case methodListImages, methodImageStatus, methodStreamImages:
			return errNotReady
		}
	}
	// The call's context ends when the call does (gRPC cancels it), or
	// when the client goes: so does the call to the runtime.
	ctx := down.Context()
	md, _ := metadata.FromIncomingContext(ctx)
	up, err := s.upstream.NewStream(metadata.NewOutgoingContext(ctx, forwardable(md)), &proxyDesc, method)
	if err != nil {
		return err // the runtime's status, unchanged
	}
	if oneRequest()[method] {
		forwardRequests(down, up, true)
	} else {
		// This goroutine may outlive the handler when the runtime ends
		// the call first; the call's context then ends both streams.
		go forwardRequests(down, up, false)
	}

	// Runtime to client. The runtime's header goes out with the first
	// message or the status, in one write, as the runtime sent it:
	// SendHeader here would cost the client a write of its own (about 7 %
	// of a ListImages of 1,000 images, measured).
	if hdr, err := up.Header(); err == nil && len(hdr) > 0 {
		if err := down.SetHeader(hdr); err != nil {
			return err
		}
	}
	for {
		f := new(frame)
		if err := up.RecvMsg(f); err != nil {
			down.SetTrailer(up.Trailer())
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		s.rewrite(down.Context(), method, f)
		if err := down.SendMsg(f); err != nil {
			return err
		}
	}
}

// oneRequest holds the methods of cri-api whose client sends one message,
// the unary and server-streaming ones (every method of CRI v1): their
// request is forwarded before the answer is read, without a goroutine of
// its own.
var oneRequest = sync.OnceValue(func() map[string]bool {
	one := map[string]bool{}
	criMethods(func(path string, oneRequest bool) { one[path] = oneRequest })
	return one
})

// criMethods calls f with the path of every method of cri-api's
// RuntimeService and ImageService, and whether its client sends one
// message.
func criMethods(f func(path string, oneRequest bool)) {
	for _, d := range []grpc.ServiceDesc{runtimeapi.RuntimeService_ServiceDesc, runtimeapi.ImageService_ServiceDesc} {
		for _, m := range d.Methods {
			f("/"+d.ServiceName+"/"+m.MethodName, true)
		}
		for _, st := range d.Streams {
			f("/"+d.ServiceName+"/"+st.StreamName, !st.ClientStreams)
		}
	}
}

// forwardRequests copies the client's messages to the runtime: all of
// them, until the client half-closes, or only the first when one is true.
// A client that goes ends the call's context, and so the runtime's call;
// a runtime that fails the call says why in its status.
func forwardRequests(down grpc.ServerStream, up grpc.ClientStream, one bool) {
	for {
		f := new(frame)
		if err := down.RecvMsg(f); err != nil {
			if errors.Is(err, io.EOF) {
				_ = up.CloseSend()
			}
			return
		}
		if up.SendMsg(f) != nil {
			return
		}
		if one {
			_ = up.CloseSend()
			return
		}
	}
}

// forwardable returns the incoming metadata a client sent, without the
// headers gRPC sets itself on the way to the runtime.
func forwardable(md metadata.MD) metadata.MD {
	out := metadata.MD{}
	for k, v := range md {
		if strings.HasPrefix(k, ":") || strings.HasPrefix(k, "grpc-") {
			continue
		}
		switch k {
		case "content-type", "user-agent", "te":
			continue
		}
		out[k] = v
	}
	return out
}

// rewrite sets Pinned in f when f is a response of an image method and the
// matcher pins an image the runtime left unpinned, patching the encoded
// message (patchPinned) rather than decoding and re-encoding it. Other
// frames, and frames where nothing changes, pass byte for byte without a
// copy. A frame that does not decode is passed on unchanged and logged: the
// shim never breaks a call it only meant to improve.
func (s *Shim) rewrite(ctx context.Context, method string, f *frame) {
	var single bool
	switch method {
	case methodListImages, methodStreamImages:
	case methodImageStatus:
		single = true
	default:
		return
	}
	m := s.pins.Load()
	if m == nil {
		return
	}
	p := patchers.Get().(*patcher)
	defer patchers.Put(p)
	var onPin func(*wireImage)
	if s.log.Enabled(ctx, slog.LevelDebug) {
		onPin = func(w *wireImage) {
			match, _ := m.Explain(w)
			s.log.Debug("pinned", "method", method, "image", strings.Clone(match.Name), "pattern", match.Pattern, "source", match.Source)
		}
	}
	pool := mem.DefaultBufferPool()
	if len(f.bufs) > 1 {
		// A large message arrives in several buffers (one per HTTP/2 data
		// frame): walk them in place, and splice the patches in.
		if !single && p.planPieces(f.bufs, m, onPin) {
			switch {
			case len(p.spans) == 0:
				return
			case len(p.spans) <= maxSplices:
				s.metrics.pin(len(p.spans))
				f.bufs = p.splicePieces(f.bufs)
				return
			}
		}
		// Many patches, or a message planPieces cannot walk: join the
		// buffers for plan and apply.
		buf := f.bufs.MaterializeToBuffer(pool)
		f.bufs.Free()
		f.bufs = mem.BufferSlice{buf}
	}
	var b []byte
	if len(f.bufs) == 1 {
		b = f.bufs[0].ReadOnlyData()
	}
	size, err := p.plan(b, single, m, onPin)
	if err != nil {
		s.log.Warn("cannot decode response, passing it unchanged", "method", method, "err", err)
		return
	}
	switch {
	case len(p.spans) == 0:
		return
	}
	s.metrics.pin(len(p.spans))
	switch {
	case len(p.spans) <= maxSplices:
		// The usual case, the pause image and a few more: splice the
		// patches in without copying the response.
		f.bufs = p.splice(f.bufs[0])
	default:
		out := pool.Get(size)
		*out = p.apply(*out, b)
		f.bufs.Free()
		f.bufs = mem.BufferSlice{mem.NewBuffer(out, pool)}
	}
}
