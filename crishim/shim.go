package crishim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sandboxpin/sandboxpin/pin"
)

// maxMsgSize is the largest message the shim passes in either direction,
// 16 MiB as the kubelet and crictl allow: ListImages on a node with thousands
// of images exceeds gRPC's 4 MiB default.
const maxMsgSize = 16 << 20

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

// shim is a transparent CRI proxy: it forwards every call to the runtime
// unchanged and corrects Image.Pinned in the answers to ListImages,
// ImageStatus and StreamImages.
type shim struct {
	upstream *grpc.ClientConn
	// runtimePath is the runtime's socket, which the relay dials once per
	// client connection.
	runtimePath string
	load        loader
	pins        pin.Set
	loaded      atomic.Bool   // pins holds rules: a load has succeeded
	ready       chan struct{} // closed once loaded is true
	readyOnce   sync.Once
	log         *slog.Logger
	tuning      hopTuning // of the shim's gRPC server
	// grpcOnly serves every connection with the gRPC proxy, never the
	// relay: the floor TestHopTable compares with.
	grpcOnly bool
	// metrics records what the shim does; nil records nothing.
	metrics *metrics
	// runtimeLost is true after a dial to the runtime failed or a runtime
	// connection ended from the runtime's side, until a dial succeeds
	// again (a reconnect).
	runtimeLost atomic.Bool
}

// lostRuntime notes that the runtime went away.
func (s *shim) lostRuntime() { s.runtimeLost.Store(true) }

// reachedRuntime notes a connection to the runtime, and counts a
// reconnect when it had gone away.
func (s *shim) reachedRuntime() {
	if s.runtimeLost.CompareAndSwap(true, false) {
		s.metrics.reconnect()
	}
}

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
	return dialRuntimeTuned(path, defaultTuning())
}

// dialRuntimeTuned is dialRuntime with the transport sized by t.
func dialRuntimeTuned(path string, t hopTuning) (*grpc.ClientConn, error) {
	opts := append([]grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(
			grpc.ForceCodecV2(wireCodec{}),
			grpc.MaxCallRecvMsgSize(maxMsgSize),
			grpc.MaxCallSendMsgSize(maxMsgSize),
		),
	}, t.dialOptions()...)
	// Reconnect soon after a runtime restart: gRPC's default backoff grows
	// to 2 minutes, during which every call would fail.
	opts = append(opts, grpc.WithConnectParams(grpc.ConnectParams{
		Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: reconnectMax},
		MinConnectTimeout: 5 * time.Second,
	}))
	conn, err := grpc.NewClient("unix://"+path, opts...)
	if err != nil {
		return nil, fmt.Errorf("runtime connection to %q: %w", path, err)
	}
	return conn, nil
}

// newShim returns a shim forwarding to upstream (a connection from
// dialRuntime) that pins what load returns. It calls load once and fails if
// load does.
func newShim(ctx context.Context, upstream *grpc.ClientConn, load loader, log *slog.Logger) (*shim, error) {
	s := newWaitingShim(upstream, load, log)
	m, err := load(ctx)
	if err != nil {
		return nil, fmt.Errorf("initial pin rules: %w", err)
	}
	s.store(m)
	return s, nil
}

// newWaitingShim returns a shim without rules yet: until a reload succeeds
// it answers the image methods with Unavailable (see proxy).
func newWaitingShim(upstream *grpc.ClientConn, load loader, log *slog.Logger) *shim {
	s := &shim{upstream: upstream, load: load, ready: make(chan struct{}), log: log, tuning: defaultTuning()}
	if upstream != nil {
		// dialRuntime's target is "unix://" and the path.
		s.runtimePath = strings.TrimPrefix(upstream.Target(), "unix://")
	}
	return s
}

func (s *shim) store(m *pin.Matcher) {
	s.pins.Store(m)
	s.loaded.Store(true)
	s.readyOnce.Do(func() { close(s.ready) })
}

// reload calls load again and swaps in the new matcher. On failure the old
// matcher stays and the error says why.
func (s *shim) reload(ctx context.Context) error {
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
func (s *shim) awaitRules(ctx context.Context, interval time.Duration) {
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
		err := s.reload(ctx)
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

// serve answers CRI calls on lis until ctx is done, then stops: calls in
// flight get shutdownGrace to finish. It closes lis, which removes a unix
// socket that net.Listen created.
//
// Once the shim has rules, each connection is relayed (relay.go). Before,
// connections go to the gRPC proxy (proxy), which answers image calls
// Unavailable; when the rules load, it tells those connections to go away
// (GOAWAY), and the clients reconnect, to the relay.
func (s *shim) serve(ctx context.Context, lis net.Listener) error {
	if s.grpcOnly {
		return s.serveGRPC(ctx, lis)
	}
	waiting := newConnQueue(lis.Addr())
	srv := s.newGRPCServer()
	var wg sync.WaitGroup
	wg.Go(func() { _ = srv.Serve(waiting) })
	wg.Go(func() {
		select {
		case <-s.ready:
			srv.GracefulStop() // returns when the calls in flight end
		case <-ctx.Done():
		}
	})

	var (
		mu     sync.Mutex
		relays = map[*relayConn]struct{}{}
		rwg    sync.WaitGroup
	)
	accepted := make(chan error, 1)
	go func() {
		for {
			conn, err := lis.Accept()
			if err != nil {
				accepted <- err
				return
			}
			if !s.loaded.Load() && waiting.push(conn) {
				continue
			}
			rwg.Go(func() {
				up, err := (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, "unix", s.runtimePath)
				if err != nil {
					// As if the client had dialled the runtime itself: the
					// connection fails, and the client tries again.
					s.lostRuntime()
					s.log.Warn("cannot reach the runtime: closing the client's connection", "runtime", s.runtimePath, "err", err)
					_ = conn.Close()
					return
				}
				s.reachedRuntime()
				rc := s.newRelayConn(conn, up)
				mu.Lock()
				relays[rc] = struct{}{}
				mu.Unlock()
				if err := rc.run(); err != nil {
					s.log.Warn("relay ended", "err", err)
				}
				mu.Lock()
				delete(relays, rc)
				mu.Unlock()
			})
		}
	}()

	var serveErr error
	select {
	case err := <-accepted:
		serveErr = fmt.Errorf("serve on %s: %w", lis.Addr(), err)
	case <-ctx.Done():
	}
	_ = lis.Close()
	_ = waiting.Close()

	// Shutdown: no new calls (GOAWAY), and shutdownGrace for those open.
	mu.Lock()
	live := make([]*relayConn, 0, len(relays))
	for rc := range relays {
		live = append(live, rc)
	}
	mu.Unlock()
	for _, rc := range live {
		rc.goAway()
	}
	stopped := stopGracefully(srv)
	timer := time.NewTimer(shutdownGrace)
	defer timer.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for done := false; !done; {
		select {
		case <-timer.C:
			s.log.Warn("calls still open at shutdown, cutting them off", "after", shutdownGrace)
			done = true
		case <-tick.C:
			mu.Lock()
			open := 0
			for rc := range relays {
				if rc.openStreams() == 0 {
					rc.close()
				}
				open += rc.openStreams()
			}
			mu.Unlock()
			select {
			case <-stopped:
				done = open == 0
			default:
			}
		}
	}
	srv.Stop()
	mu.Lock()
	for rc := range relays {
		rc.close()
	}
	mu.Unlock()
	rwg.Wait()
	<-stopped
	wg.Wait()
	if serveErr != nil && !errors.Is(serveErr, net.ErrClosed) {
		return serveErr
	}
	return nil
}

// stopGracefully starts srv.GracefulStop and returns a channel closed
// once it returns: when the calls in flight have ended, or srv.Stop cut
// them off.
func stopGracefully(srv *grpc.Server) <-chan struct{} {
	stopped := make(chan struct{})
	go func() {
		srv.GracefulStop()
		close(stopped)
	}()
	return stopped
}

// newGRPCServer returns the gRPC proxy's server.
func (s *shim) newGRPCServer() *grpc.Server {
	return grpc.NewServer(append([]grpc.ServerOption{
		grpc.ForceServerCodecV2(wireCodec{}),
		grpc.UnknownServiceHandler(s.proxy),
		grpc.MaxRecvMsgSize(maxMsgSize),
		grpc.MaxSendMsgSize(maxMsgSize),
	}, s.tuning.serverOptions()...)...)
}

// serveGRPC is serve with the gRPC proxy for every connection.
func (s *shim) serveGRPC(ctx context.Context, lis net.Listener) error {
	srv := s.newGRPCServer()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	select {
	case err := <-served:
		return fmt.Errorf("serve on %s: %w", lis.Addr(), err)
	case <-ctx.Done():
	}
	stopped := stopGracefully(srv)
	timer := time.NewTimer(shutdownGrace)
	defer timer.Stop()
	select {
	case <-stopped:
	case <-timer.C:
		s.log.Warn("calls still open at shutdown, cutting them off", "after", shutdownGrace)
		srv.Stop()
		<-stopped
	}
	if err := <-served; err != nil {
		return fmt.Errorf("serve on %s: %w", lis.Addr(), err)
	}
	return nil
}

// connQueue is a net.Listener whose connections are pushed to it: those
// the gRPC proxy serves while the shim waits for rules.
type connQueue struct {
	addr net.Addr
	ch   chan net.Conn
	done chan struct{}
	once sync.Once
}

func newConnQueue(addr net.Addr) *connQueue {
	return &connQueue{addr: addr, ch: make(chan net.Conn), done: make(chan struct{})}
}

// push hands conn to Accept; false once the queue is closed.
func (q *connQueue) push(conn net.Conn) bool {
	select {
	case q.ch <- conn:
		return true
	case <-q.done:
		return false
	}
}

func (q *connQueue) Accept() (net.Conn, error) {
	select {
	case c := <-q.ch:
		return c, nil
	case <-q.done:
		return nil, net.ErrClosed
	}
}

func (q *connQueue) Close() error {
	q.once.Do(func() { close(q.done) })
	return nil
}

func (q *connQueue) Addr() net.Addr { return q.addr }

// proxy is the handler of every call: it opens the same method on the
// runtime and copies messages both ways, headers and trailers included,
// rewriting only the responses that carry images. A status from the runtime
// is returned as it is.
func (s *shim) proxy(_ any, down grpc.ServerStream) (err error) {
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
	ctx, cancel := context.WithCancel(down.Context())
	defer cancel()
	md, _ := metadata.FromIncomingContext(ctx)
	ctx = metadata.NewOutgoingContext(ctx, forwardable(md))
	up, err := s.upstream.NewStream(ctx, &proxyDesc, method)
	if err != nil {
		return err // the runtime's status, unchanged
	}

	// Client to runtime. This goroutine may outlive the handler when the
	// runtime ends the call first; the cancelled ctx then ends both streams.
	go func() {
		for {
			f := new(frame)
			if err := down.RecvMsg(f); err != nil {
				if errors.Is(err, io.EOF) {
					_ = up.CloseSend()
				} else {
					cancel()
				}
				return
			}
			if err := up.SendMsg(f); err != nil {
				// The call's status comes from up.RecvMsg below.
				return
			}
		}
	}()

	// Runtime to client.
	if hdr, err := up.Header(); err == nil && len(hdr) > 0 {
		if err := down.SendHeader(hdr); err != nil {
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
func (s *shim) rewrite(ctx context.Context, method string, f *frame) {
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
