package crishim

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc/codes"

	"github.com/sandboxpin/sandboxpin/pin"
)

// The relay is how the shim forwards calls once it has rules. Instead of
// ending each gRPC call at the shim and making it again towards the
// runtime (two HTTP/2 stacks, a handler and writer goroutines per call:
// the gRPC proxy of shim.go, which TestHopTable measures as the floor of
// one gRPC hop), it pairs each connection from a client with a connection
// of its own to the runtime and copies HTTP/2 frames between them as they
// arrive, on two goroutines per connection. Frames are read and written
// with golang.org/x/net/http2's Framer, which checks frame sizes, padding
// and the order of HEADERS and CONTINUATION frames; each frame is written
// again as it came (a HEADERS frame without its padding, which flow
// control does not count). BenchmarkFrameLayer and TestFramerCost compare
// it with the hand-written frames the relay used before (h2_hand_test.go):
// the Framer costs under 1 % of a 10,000-image ListImages.
//
// HPACK state thus stays the two endpoints' own: the relay decodes the
// header blocks of both sides (the client's for each stream's method, the
// runtime's for each call's grpc-status) but passes the blocks on as they
// came and never writes one of its own, so it cannot put the two out of
// step.
//
// It holds back only the DATA of the image methods' responses, one gRPC
// message at a time, reads each image as it arrives (patcher.walk), and
// sends the message on once it is whole, pinned where the rules say.
// Holding a message and growing it take flow control (RFC 9113 section
// 5.2) from the relay itself:
//   - the connection's window is the relay's own on both sides: it grants
//     the runtime window for each DATA frame as it reads it (and 16 MiB to
//     start with), keeps the client's connection grants to itself, and
//     sends the client DATA only within them;
//   - a stream's window is the client's, passed on as it grants it, except
//     for a held message: the runtime would stall on one larger than the
//     client's window, since the client cannot grant window for bytes it
//     has not seen, so the relay grants the runtime the window for the
//     rest of the message (as grpc-go's receiver does once it reads a
//     message's length: grpc-go v1.79.3, internal/transport/transport.go
//     calls requestRead with it, and flowcontrol.go, inFlow.maybeAdjust,
//     grants the whole message) and keeps back as much of the client's later
//     grants on that stream, which pay that debt; the debt ends with the
//     stream;
//   - the client never receives more than it granted: the relay keeps
//     account of the client's windows, of the connection and each stream,
//     and sends DATA only within them.

// HTTP/2's defaults of the settings until a peer sends its own (RFC 9113
// section 6.5.2), and its limits.
const (
	defaultWindow     = 65535
	defaultMaxFrame   = 16384
	defaultHeaderSize = 4096
	maxWindow         = 1<<31 - 1
	clientPreface     = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
)

// errH2 is a frame the relay cannot pass on: the connection ends.
var errH2 = errors.New("HTTP/2 protocol error")

const (
	grpcMsgHeaderLen = 5 // compressed flag and length (gRPC over HTTP/2)
	// relayConnWindow is the runtime's connection window: the relay
	// grants it again as it reads, so it only needs to cover what is on
	// the way.
	relayConnWindow = 16 << 20
	// maxHeaderBlock bounds a request's header block, as grpc-go's server
	// bounds its header list by default (grpc-go v1.79.3,
	// internal/transport/defaults.go, defaultServerMaxHeaderListSize).
	maxHeaderBlock  = 16 << 20
	relayBufferSize = 256 << 10
)

// relayKind is what the relay does with a stream's response DATA.
type relayKind uint8

const (
	relayPass   relayKind = iota // copied as it comes
	relayList                    // ListImages, StreamImages: images patched
	relayStatus                  // ImageStatus: the image patched
)

// relayStream is the relay's state of one stream.
type relayStream struct {
	kind   relayKind
	method string
	// methodID is the stream's method for metrics (methodID).
	methodID int
	// Windows, in bytes: avail is the client's, what the relay may still
	// send it; upWin the runtime's, what the client and the relay granted
	// it; debt what the relay granted on the client's behalf, not yet paid
	// back by the client's grants. Guarded by relayConn.mu.
	avail, upWin, debt int64

	// The message being held; touched by the response pump only.
	held   []byte
	m      *pin.Matcher // the rules it is patched with
	p      *patcher     // what walking it found
	walked int          // offset in its body up to which p has walked
	bad    error        // why it cannot be patched: it goes on unchanged
}

// relayConn is a client connection and its runtime connection.
type relayConn struct {
	shim     *shim
	down, up net.Conn
	upMu     sync.Mutex // upW and upFr's writes: by both pumps
	upW      *bufio.Writer
	// upFr reads the client's frames (downR) and writes frames to the
	// runtime (upW); downFr reads the runtime's frames (upR) and writes
	// frames to the client (downW). A Framer may read on one goroutine
	// while another writes; writes hold the writer's mutex.
	upFr, downFr *http2.Framer
	downR        *bufio.Reader
	// upInBlock and downInBlock are true while a header block is being
	// passed on, which no other frame may interrupt (RFC 9113 section
	// 6.10): the relay's own frames wait. Guarded by upMu and downMu.
	upInBlock   bool
	downMu      sync.Mutex // downW: the response pump, and goAway
	downW       *bufio.Writer
	downInBlock bool
	upR         *bufio.Reader
	// decoderMax is the runtime's SETTINGS_HEADER_TABLE_SIZE, which bounds
	// the client's HPACK table.
	decoderMax atomic.Uint32
	// runtimeMax and clientMaxSeen are the largest SETTINGS_MAX_FRAME_SIZE
	// the runtime and the client have sent: no frame to either may be
	// larger (RFC 9113 section 4.2), so none is read that is.
	runtimeMax, clientMaxSeen atomic.Uint32

	mu         sync.Mutex
	cond       sync.Cond // window granted, or the connection closed
	closed     bool
	streams    map[uint32]*relayStream
	lastStream uint32           // the highest stream the client opened
	clientInit int64            // the client's SETTINGS_INITIAL_WINDOW_SIZE
	clientMax  int              // the client's SETTINGS_MAX_FRAME_SIZE
	connAvail  int64            // the client's connection window
	credit     map[uint32]int64 // window to grant the runtime at the next flush; 0 is the connection

	// Scratch of the response pump.
	segs     [][]byte
	lens     [grpcMsgHeaderLen + maxSplices*10]byte
	scratch  []byte
	spare    []byte // a held buffer to reuse for the next message
	frameBuf []byte // a DATA frame's payload that spans segments
	memo     *verdictMemo

	// The runtime's header blocks, decoded by the response pump for the
	// grpc-status of each call (metrics). respDecoderMax is the client's
	// SETTINGS_HEADER_TABLE_SIZE, which bounds the runtime's HPACK table.
	respDec        *hpack.Decoder
	respDecoderMax atomic.Uint32
	respStatus     string // grpc-status of the block being read
	respEnds       bool   // the block being read ends its stream: trailers
	respMethod     int    // the method of the block's stream
	respBroken     bool   // a block did not decode: statuses are unknown from now on
}

// newRelayConn pairs a client connection with a runtime connection.
func (s *shim) newRelayConn(down, up net.Conn) *relayConn {
	c := &relayConn{
		shim: s, down: down, up: up,
		upW:        bufio.NewWriterSize(up, relayBufferSize),
		downW:      bufio.NewWriterSize(down, relayBufferSize),
		upR:        bufio.NewReaderSize(up, relayBufferSize),
		downR:      bufio.NewReaderSize(down, relayBufferSize),
		streams:    map[uint32]*relayStream{},
		clientInit: defaultWindow,
		clientMax:  defaultMaxFrame,
		connAvail:  defaultWindow,
		credit:     map[uint32]int64{},
		memo:       newVerdictMemo(),
	}
	c.cond.L = &c.mu
	c.upFr = http2.NewFramer(c.upW, c.downR)
	c.downFr = http2.NewFramer(c.downW, c.upR)
	for _, fr := range []*http2.Framer{c.upFr, c.downFr} {
		// Frames are passed on before the next is read: the Framer may
		// reuse them.
		fr.SetReuseFrames()
	}
	c.decoderMax.Store(defaultHeaderSize)
	c.respDecoderMax.Store(defaultHeaderSize)
	c.respDec = hpack.NewDecoder(defaultHeaderSize, func(f hpack.HeaderField) {
		if f.Name == "grpc-status" {
			c.respStatus = f.Value
		}
	})
	// A field the decoder must hold whole is bounded as a request's
	// header block is: past it, statuses are unknown (respBroken).
	c.respDec.SetMaxStringLength(maxHeaderBlock)
	c.runtimeMax.Store(defaultMaxFrame)
	c.clientMaxSeen.Store(defaultMaxFrame)
	return c
}

// run relays until either side ends or fails, then closes both. It
// returns nil when a side just went away.
func (c *relayConn) run() error {
	errc := make(chan error, 2)
	go func() { errc <- c.requests() }()
	go func() { errc <- c.responses() }()
	err := <-errc
	c.close()
	if other := <-errc; err == nil {
		err = other // the other side, ended by the close
	}
	if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// close ends the relay: both connections close, and a pump waiting for
// window wakes up.
func (c *relayConn) close() {
	c.mu.Lock()
	c.closed = true
	c.cond.Broadcast()
	c.mu.Unlock()
	_ = c.down.Close()
	_ = c.up.Close()
}

// goAway tells the client that the shim shuts down: it should open no
// more streams on this connection (RFC 9113 section 6.8). A GOAWAY needs no
// HPACK, so the relay can send one of its own. Its last stream is 2^31-1,
// as the RFC's first GOAWAY of a graceful shutdown: it does not say any
// stream went unprocessed, since the runtime may process every stream the
// relay passed on. The streams open go on.
func (c *relayConn) goAway() {
	// A relay busy writing to a client that does not read would hold up
	// the shutdown, and a header block may not be interrupted: that client
	// gets no GOAWAY, only the end of the connection once the grace period
	// is over.
	if !c.downMu.TryLock() {
		return
	}
	defer c.downMu.Unlock()
	if c.downInBlock {
		return
	}
	_ = c.down.SetWriteDeadline(time.Now().Add(time.Second))
	defer func() { _ = c.down.SetWriteDeadline(time.Time{}) }()
	if err := c.downFr.WriteGoAway(maxWindow, http2.ErrCodeNo, nil); err == nil {
		_ = c.downW.Flush()
	}
}

// openStreams returns how many streams are open.
func (c *relayConn) openStreams() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.streams)
}

// writeUp writes to the runtime what write writes with upFr; open says
// whether a header block is still open after it. Once none is, the
// window the relay grants goes out too. flush sends it all.
func (c *relayConn) writeUp(write func(*http2.Framer) error, open, flush bool) error {
	c.upMu.Lock()
	defer c.upMu.Unlock()
	if err := write(c.upFr); err != nil {
		return err
	}
	c.upInBlock = open
	if !open {
		if err := c.writeCredits(); err != nil {
			return err
		}
	}
	if flush {
		return c.upW.Flush()
	}
	return nil
}

// writeCredits writes the window the relay grants the runtime, as
// WINDOW_UPDATE frames. Called with upMu held, outside a header block.
func (c *relayConn) writeCredits() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, n := range c.credit {
		if err := c.upFr.WriteWindowUpdate(id, uint32(n)); err != nil { //nolint:gosec // G115: grant keeps windows under 2^31
			return err
		}
	}
	clear(c.credit)
	return nil
}

// frameError returns the error of reading a frame from (the client or the
// runtime): an HTTP/2 error of the peer's wraps errH2.
func frameError(from string, err error) error {
	var ce http2.ConnectionError
	var se http2.StreamError
	switch {
	case errors.As(err, &ce), errors.As(err, &se), errors.Is(err, http2.ErrFrameTooLarge):
		return fmt.Errorf("%w: from the %s: %w", errH2, from, err)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("frame from the %s: %w", from, err)
	}
	return err
}

// writeFrame writes f with w as it came, but for padding: HEADERS lose
// theirs (header frames are not flow-controlled), DATA keep its length.
// The relay passes every frame it does not change on with it.
func writeFrame(w *http2.Framer, f http2.Frame) error {
	switch f := f.(type) {
	case *http2.DataFrame:
		return w.WriteDataPadded(f.StreamID, f.StreamEnded(), f.Data(), padding(f))
	case *http2.HeadersFrame:
		p := http2.HeadersFrameParam{StreamID: f.StreamID, BlockFragment: f.HeaderBlockFragment(),
			EndStream: f.StreamEnded(), EndHeaders: f.HeadersEnded()}
		if f.HasPriority() {
			p.Priority = f.Priority
		}
		return w.WriteHeaders(p)
	case *http2.ContinuationFrame:
		return w.WriteContinuation(f.StreamID, f.HeadersEnded(), f.HeaderBlockFragment())
	case *http2.PushPromiseFrame:
		return w.WritePushPromise(http2.PushPromiseParam{StreamID: f.StreamID, PromiseID: f.PromiseID,
			BlockFragment: f.HeaderBlockFragment(), EndHeaders: f.HeadersEnded()})
	case *http2.SettingsFrame:
		if f.IsAck() {
			return w.WriteSettingsAck()
		}
		n := f.NumSettings()
		ss := make([]http2.Setting, n)
		for i := range n {
			ss[i] = f.Setting(i)
		}
		return w.WriteSettings(ss...)
	case *http2.WindowUpdateFrame:
		return w.WriteWindowUpdate(f.StreamID, f.Increment)
	case *http2.RSTStreamFrame:
		return w.WriteRSTStream(f.StreamID, f.ErrCode)
	case *http2.PingFrame:
		return w.WritePing(f.IsAck(), f.Data)
	case *http2.GoAwayFrame:
		return w.WriteGoAway(f.LastStreamID, f.ErrCode, f.DebugData())
	case *http2.PriorityFrame:
		return w.WritePriority(f.StreamID, f.PriorityParam)
	case *http2.UnknownFrame:
		return w.WriteRawFrame(f.Type, f.Flags, f.StreamID, f.Payload())
	}
	return fmt.Errorf("%w: cannot pass on %v", errH2, f.Header())
}

// zeros is padding: RFC 9113 section 6.1 wants it zero.
var zeros [256]byte

// padding returns the padding of a DATA frame: its length in the frame
// beyond the pad length byte and the data.
func padding(f *http2.DataFrame) []byte {
	if !f.Flags.Has(http2.FlagDataPadded) {
		return nil
	}
	return zeros[:int(f.Length)-1-len(f.Data())]
}

// requests copies the client's frames to the runtime, noting the methods
// of new streams and the client's windows on the way.
func (c *relayConn) requests() error {
	var preface [len(clientPreface)]byte
	if _, err := io.ReadFull(c.downR, preface[:]); err != nil {
		return fmt.Errorf("client preface: %w", err)
	}
	if string(preface[:]) != clientPreface {
		return fmt.Errorf("%w: the client did not start with the HTTP/2 preface", errH2)
	}
	if err := c.writeUp(func(*http2.Framer) error { _, err := c.upW.Write(preface[:]); return err }, false, false); err != nil {
		return err
	}
	fr := c.upFr
	var (
		block       []byte // the header block being read
		blockStream uint32
		inBlock     bool
		path        string
		first       = true
	)
	dec := hpack.NewDecoder(defaultHeaderSize, func(f hpack.HeaderField) {
		if f.Name == ":path" {
			path = f.Value
		}
	})
	// headerBlock adds a fragment of stream id's header block; end says
	// the block ends with it, and the stream it opens is recorded.
	headerBlock := func(id uint32, frag []byte, end bool) error {
		if len(block)+len(frag) > maxHeaderBlock {
			// A flood of CONTINUATION frames (CVE-2023-45288) is not
			// held in memory.
			return fmt.Errorf("%w: header block on stream %d over %d bytes", errH2, id, maxHeaderBlock)
		}
		block = append(block, frag...)
		inBlock = !end
		if !end {
			return nil
		}
		path = ""
		dec.SetAllowedMaxDynamicTableSize(c.decoderMax.Load())
		if _, err := dec.Write(block); err != nil {
			return fmt.Errorf("%w: header block on stream %d: %w", errH2, id, err)
		}
		if err := dec.Close(); err != nil {
			return fmt.Errorf("%w: header block on stream %d: %w", errH2, id, err)
		}
		c.openStream(id, path)
		return nil
	}
	for {
		fr.SetMaxReadFrameSize(c.runtimeMax.Load())
		f, err := fr.ReadFrame()
		if err != nil {
			// The Framer checks frame sizes, padding and that a header
			// block is HEADERS and then CONTINUATION frames of the same
			// stream, nothing between (RFC 9113 section 6.10).
			return frameError("client", err)
		}
		write := func(w *http2.Framer) error { return writeFrame(w, f) }
		switch f := f.(type) {
		case *http2.HeadersFrame:
			block, blockStream = block[:0], f.StreamID
			err = headerBlock(blockStream, f.HeaderBlockFragment(), f.HeadersEnded())
		case *http2.ContinuationFrame:
			err = headerBlock(blockStream, f.HeaderBlockFragment(), f.HeadersEnded())
		case *http2.SettingsFrame:
			if !f.IsAck() {
				err = c.clientSettings(f)
			}
		case *http2.WindowUpdateFrame:
			switch fwd := c.clientWindowUpdate(f.StreamID, int64(f.Increment)); {
			case fwd == 0:
				write = func(*http2.Framer) error { return nil } // all of it paid debt
			case fwd != int64(f.Increment):
				id := f.StreamID
				write = func(w *http2.Framer) error { return w.WriteWindowUpdate(id, uint32(fwd)) } //nolint:gosec // G115: 0 < fwd <= inc < 2^31
			}
		case *http2.RSTStreamFrame:
			c.endStreamReset(f.StreamID, f.ErrCode)
		}
		if err != nil {
			return err
		}
		if first {
			// After the client's SETTINGS, which must come first: the
			// runtime's connection window, the relay's from now on.
			pass := write
			write = func(w *http2.Framer) error {
				if err := pass(w); err != nil {
					return err
				}
				return w.WriteWindowUpdate(0, relayConnWindow-defaultWindow)
			}
			first = false
		}
		if err := c.writeUp(write, inBlock, c.downR.Buffered() == 0); err != nil {
			return err
		}
	}
}

// openStream records a stream the client opened with a request for path.
func (c *relayConn) openStream(id uint32, path string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.streams[id]; ok || id <= c.lastStream {
		return // trailers, or a stream that is over
	}
	c.lastStream = id
	st := &relayStream{avail: c.clientInit, upWin: c.clientInit, methodID: methodID(path)}
	if c.shim.pins.Load() == nil {
		// No rules, nothing to patch: every stream passes as it comes.
		path = ""
	}
	switch path {
	case methodListImages, methodStreamImages:
		st.kind, st.method = relayList, path
	case methodImageStatus:
		st.kind, st.method = relayStatus, path
	}
	c.streams[id] = st
}

// stream returns the state of stream id, nil once it is over.
func (c *relayConn) stream(id uint32) *relayStream {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.streams[id]
}

// endStreamReset forgets a stream that an RST_STREAM frame with error code
// ended, and counts its call: Canceled for CANCEL, as gRPC reads it,
// Internal for other errors.
func (c *relayConn) endStreamReset(id uint32, code http2.ErrCode) {
	c.mu.Lock()
	st, ok := c.streams[id]
	delete(c.streams, id)
	c.cond.Broadcast()
	c.mu.Unlock()
	if !ok {
		return
	}
	status := codes.Internal
	if code == http2.ErrCodeCancel {
		status = codes.Canceled
	}
	c.shim.metrics.call(st.methodID, status)
}

// endStream forgets a stream that is over; its debt ends with it.
func (c *relayConn) endStream(id uint32) {
	c.mu.Lock()
	delete(c.streams, id)
	c.cond.Broadcast()
	c.mu.Unlock()
}

// clientSettings applies the client's settings that bound what the relay
// sends it. The runtime applies them too, on receipt.
func (c *relayConn) clientSettings(f *http2.SettingsFrame) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.cond.Broadcast()
	return f.ForeachSetting(func(s http2.Setting) error {
		switch v := s.Val; s.ID {
		case http2.SettingInitialWindowSize:
			// RFC 9113 section 6.9.2: the change applies to every open
			// stream's window.
			delta := int64(v) - c.clientInit
			c.clientInit = int64(v)
			for _, st := range c.streams {
				st.avail += delta
				st.upWin += delta
			}
		case http2.SettingHeaderTableSize:
			c.respDecoderMax.Store(v)
		case http2.SettingMaxFrameSize:
			c.clientMax = int(v)
			if v > c.clientMaxSeen.Load() {
				c.clientMaxSeen.Store(v)
			}
		}
		return nil
	})
}

// clientWindowUpdate adds a grant of the client's to its window and
// returns the part to pass on to the runtime: what is left once the
// relay's debt is paid.
func (c *relayConn) clientWindowUpdate(id uint32, inc int64) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.cond.Broadcast()
	if id == 0 {
		c.connAvail += inc
		return 0 // the runtime's connection window is the relay's
	}
	st, ok := c.streams[id]
	if !ok {
		return inc
	}
	st.avail += inc
	pay := min(st.debt, inc)
	st.debt -= pay
	st.upWin += inc - pay
	return inc - pay
}

// grant adds n to the runtime's window on stream id with state st; the
// next flush sends it. With debt, the grant is made on the client's
// behalf, and the client's own grants on the stream pay it back. Called
// with c.mu held.
func (c *relayConn) grant(st *relayStream, id uint32, n int64, debt bool) {
	n = min(n, maxWindow-st.upWin)
	if n <= 0 {
		return
	}
	c.credit[id] += n
	st.upWin += n
	if debt {
		st.debt += n
	}
}

// responses copies the runtime's frames to the client, holding and
// patching the image methods' messages.
func (c *relayConn) responses() error {
	fr := c.downFr
	for {
		fr.SetMaxReadFrameSize(c.clientMaxSeen.Load())
		f, err := fr.ReadFrame()
		if err != nil {
			c.mu.Lock()
			closed := c.closed
			c.mu.Unlock()
			if !closed {
				c.shim.lostRuntime() // the runtime ended the connection
			}
			return frameError("runtime", err)
		}
		if df, ok := f.(*http2.DataFrame); ok {
			err = c.responseData(df)
		} else {
			err = c.responseFrame(f)
		}
		if err != nil {
			return err
		}
		if c.upR.Buffered() == 0 {
			if err := c.flush(); err != nil {
				return err
			}
		}
	}
}

// responseFrame passes on a frame from the runtime other than DATA.
func (c *relayConn) responseFrame(f http2.Frame) error {
	switch f := f.(type) {
	case *http2.SettingsFrame:
		if !f.IsAck() {
			if err := f.ForeachSetting(func(s http2.Setting) error {
				switch s.ID {
				case http2.SettingHeaderTableSize:
					c.decoderMax.Store(s.Val)
				case http2.SettingMaxFrameSize:
					if s.Val > c.runtimeMax.Load() {
						c.runtimeMax.Store(s.Val)
					}
				}
				return nil
			}); err != nil {
				return err
			}
		}
	case *http2.HeadersFrame:
		c.respStatus, c.respEnds, c.respMethod = "", f.StreamEnded(), -1
		if f.StreamEnded() {
			// Trailers: what is held goes first, as it is.
			if st := c.stream(f.StreamID); st != nil {
				c.respMethod = st.methodID
				if err := c.release(f.StreamID, st); err != nil {
					return err
				}
			}
			defer c.endStream(f.StreamID)
		}
		c.decodeResponse(f.HeaderBlockFragment(), f.HeadersEnded())
	case *http2.PushPromiseFrame:
		c.respEnds = false
		c.decodeResponse(f.HeaderBlockFragment(), f.HeadersEnded())
	case *http2.ContinuationFrame:
		c.decodeResponse(f.HeaderBlockFragment(), f.HeadersEnded())
	case *http2.RSTStreamFrame:
		defer c.endStreamReset(f.StreamID, f.ErrCode)
	}
	return c.forward(f)
}

// decodeResponse decodes a fragment of the runtime's header block, to keep
// the HPACK table in step with the client's and read grpc-status; end says
// the block ends with it. A call whose trailers end here is counted. The
// relay passes the block on as it came whatever this finds: a block that
// does not decode only leaves the status of later calls unknown.
func (c *relayConn) decodeResponse(frag []byte, end bool) {
	if c.respBroken {
		if end && c.respEnds && c.respMethod >= 0 {
			c.shim.metrics.call(c.respMethod, codes.Unknown)
		}
		return
	}
	c.respDec.SetAllowedMaxDynamicTableSize(c.respDecoderMax.Load())
	if _, err := c.respDec.Write(frag); err != nil {
		c.respBroken = true
	}
	if !end {
		return
	}
	if !c.respBroken {
		if err := c.respDec.Close(); err != nil {
			c.respBroken = true
		}
	}
	if c.respEnds && c.respMethod >= 0 {
		code := codes.Unknown
		if !c.respBroken {
			code = parseStatus(c.respStatus)
		}
		c.shim.metrics.call(c.respMethod, code)
	}
}

// forward writes a frame to the client as it came.
func (c *relayConn) forward(f http2.Frame) error {
	c.downMu.Lock()
	defer c.downMu.Unlock()
	switch f := f.(type) {
	case *http2.HeadersFrame:
		c.downInBlock = !f.HeadersEnded()
	case *http2.PushPromiseFrame:
		c.downInBlock = !f.HeadersEnded()
	case *http2.ContinuationFrame:
		c.downInBlock = !f.HeadersEnded()
	}
	return writeFrame(c.downFr, f)
}

// flush sends what is buffered for the client, and the window the relay
// grants the runtime.
func (c *relayConn) flush() error {
	c.downMu.Lock()
	err := c.downW.Flush()
	c.downMu.Unlock()
	if err != nil {
		return err
	}
	c.upMu.Lock()
	defer c.upMu.Unlock()
	if c.upInBlock {
		return nil // the request pump writes them once the block ends
	}
	if err := c.writeCredits(); err != nil {
		return err
	}
	return c.upW.Flush()
}

// responseData passes on, or holds, a DATA frame from the runtime.
func (c *relayConn) responseData(f *http2.DataFrame) error {
	id, length, data := f.StreamID, int64(f.Length), f.Data()
	c.mu.Lock()
	st := c.streams[id]
	c.credit[0] += length // read: the runtime may send as much again
	if st != nil {
		st.upWin -= length
		if padding := length - int64(len(data)); padding > 0 {
			// Padding never reaches the client, which so never grants it
			// back: the relay does, for good.
			c.grant(st, id, padding, false)
		}
	}
	c.mu.Unlock()
	end := f.StreamEnded()
	if st == nil || st.kind == relayPass {
		return c.sendData(id, [][]byte{data}, len(data), end)
	}
	// Held: the data joins the message.
	if st.held == nil {
		st.held, c.spare = c.spare[:0], nil
	}
	n := len(st.held)
	st.held = grow(st.held, len(data))
	copy(st.held[n:], data)
	if err := c.advance(id, st); err != nil {
		return err
	}
	if end {
		err := c.release(id, st)
		c.endStream(id)
		return err
	}
	return nil
}

// grow returns b with n more bytes of length, their content undefined.
func grow(b []byte, n int) []byte {
	if cap(b)-len(b) < n {
		nb := make([]byte, len(b), max(2*cap(b), len(b)+n, 4096))
		copy(nb, b)
		b = nb
	}
	return b[:len(b)+n]
}

// advance reads what has arrived of the messages held for stream id, sends
// on those that are whole, and makes sure the runtime has the window to
// send the rest of the one it is in.
func (c *relayConn) advance(id uint32, st *relayStream) error {
	for {
		if len(st.held) < grpcMsgHeaderLen {
			c.needWindow(id, st, int64(grpcMsgHeaderLen-len(st.held)))
			return nil
		}
		size := int(binary.BigEndian.Uint32(st.held[1:]))
		if size > maxMsgSize {
			// Too large for the client anyway: not for the relay to
			// judge. The rest of the stream passes as it comes.
			st.kind = relayPass
			return c.release(id, st)
		}
		total := grpcMsgHeaderLen + size
		if cap(st.held) < total {
			nb := c.spare[:0]
			c.spare = nil
			if cap(nb) < total {
				nb = make([]byte, 0, total)
			}
			nb = append(nb, st.held...)
			c.keep(st.held)
			st.held = nb
		}
		if st.p == nil {
			st.p = patchers.Get().(*patcher)
			st.p.spans = st.p.spans[:0]
			st.walked, st.bad, st.m = 0, nil, c.shim.pins.Load()
			if st.kind == relayList && st.m != nil {
				c.memo.use(st.m)
				st.p.memo = c.memo
			}
		}
		complete := len(st.held) >= total
		if st.held[0] == 0 && st.m != nil && st.bad == nil && (st.kind == relayList || complete) {
			body := st.held[grpcMsgHeaderLen:min(len(st.held), total)]
			st.walked, st.bad = st.p.walk(body, st.walked, st.kind == relayStatus, st.m, c.onPin(st), !complete)
		}
		if !complete {
			c.needWindow(id, st, int64(total-len(st.held)))
			return nil
		}
		err := c.sendMessage(id, st, st.held[:total])
		st.p.memo = nil
		patchers.Put(st.p)
		st.p, st.m = nil, nil
		n := copy(st.held, st.held[total:])
		st.held = st.held[:n]
		if n == 0 {
			c.keep(st.held)
			st.held = nil
		}
		if err != nil {
			return err
		}
	}
}

// keep keeps b, a held buffer no longer in use, for the next message if it
// is larger than the one kept: a client that lists images every few
// seconds gets the same buffer each time.
func (c *relayConn) keep(b []byte) {
	if cap(b) > cap(c.spare) {
		c.spare = b[:0]
	}
}

// needWindow makes sure the runtime may send need more bytes on stream id.
func (c *relayConn) needWindow(id uint32, st *relayStream, need int64) {
	c.mu.Lock()
	c.grant(st, id, need-st.upWin, true)
	c.mu.Unlock()
}

// onPin returns what the patcher calls with each image it pins: a debug
// log line, when debug logging is on.
func (c *relayConn) onPin(st *relayStream) func(*wireImage) {
	log := c.shim.log
	if !log.Enabled(context.Background(), slog.LevelDebug) {
		return nil
	}
	m := st.m
	return func(w *wireImage) {
		match, _ := m.Explain(w)
		log.Debug("pinned", "method", st.method, "image", strings.Clone(match.Name), "pattern", match.Pattern, "source", match.Source)
	}
}

// sendMessage sends a whole held message (with its gRPC prefix), patched.
func (c *relayConn) sendMessage(id uint32, st *relayStream, msg []byte) error {
	if st.bad != nil {
		c.shim.log.Warn("cannot decode response, passing it unchanged", "method", st.method, "err", st.bad)
	}
	if st.bad != nil || st.p == nil || len(st.p.spans) == 0 {
		return c.sendData(id, [][]byte{msg}, len(msg), false)
	}
	c.shim.metrics.pin(len(st.p.spans))
	body := msg[grpcMsgHeaderLen:]
	size := st.p.size(body)
	grown := int64(size - len(body))
	c.mu.Lock()
	// The client will grant the added bytes back too.
	st.debt += grown
	c.mu.Unlock()
	hdr := c.lens[:grpcMsgHeaderLen]
	hdr[0] = 0
	binary.BigEndian.PutUint32(hdr[1:], uint32(size)) //nolint:gosec // G115: size <= maxMsgSize + a few bytes
	if len(st.p.spans) > maxSplices {
		if cap(c.scratch) < size {
			c.scratch = make([]byte, size)
		}
		out := st.p.apply(c.scratch[:0], body)
		return c.sendData(id, [][]byte{hdr, out}, grpcMsgHeaderLen+size, false)
	}
	c.segs = st.p.segments(append(c.segs[:0], hdr), c.lens[grpcMsgHeaderLen:grpcMsgHeaderLen], body)
	return c.sendData(id, c.segs, grpcMsgHeaderLen+size, false)
}

// release sends what is held for a stream as it is: the end of a stream
// whose last message is incomplete, or one too large to hold.
func (c *relayConn) release(id uint32, st *relayStream) error {
	if st.p != nil {
		st.p.memo = nil
		patchers.Put(st.p)
		st.p, st.m = nil, nil
	}
	if len(st.held) == 0 {
		return nil
	}
	held := st.held
	st.held = nil
	err := c.sendData(id, [][]byte{held}, len(held), false)
	c.keep(held)
	return err
}

// sendData sends total bytes, the concatenation of segs, to the client on
// stream id, in DATA frames within the client's windows and frame size,
// waiting for the client's grants when it must; endStream ends the stream
// with the last. Data of a stream that is over is dropped.
func (c *relayConn) sendData(id uint32, segs [][]byte, total int, endStream bool) error {
	cur := segCursor{segs: segs}
	for first := true; first || total > 0; first = false {
		n, maxFrame, err := c.window(id, total)
		if err != nil {
			return err
		}
		if n < 0 {
			return nil
		}
		if err := c.writeData(id, &cur, n, maxFrame, endStream && n == total); err != nil {
			return err
		}
		total -= n
	}
	return nil
}

// window waits until the client's windows let the relay send some of
// total bytes on stream id and takes them: it returns how many (0 when
// total is 0; -1 when the stream is over) and the client's frame size.
func (c *relayConn) window(id uint32, total int) (int, int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	flushed := false
	for {
		if c.closed {
			return 0, 0, net.ErrClosed
		}
		st, ok := c.streams[id]
		if !ok {
			return -1, 0, nil
		}
		n := int(min(int64(total), c.connAvail, st.avail))
		if n > 0 || total == 0 {
			c.connAvail -= int64(n)
			st.avail -= int64(n)
			return n, c.clientMax, nil
		}
		if flushed {
			c.cond.Wait()
			flushed = false
			continue
		}
		// Out of window: what is buffered must reach the client for it
		// to grant more; a grant may come meanwhile, so look again before
		// waiting.
		c.mu.Unlock()
		c.downMu.Lock()
		err := c.downW.Flush()
		c.downMu.Unlock()
		c.mu.Lock()
		if err != nil {
			return 0, 0, err
		}
		flushed = true
	}
}

// writeData writes n bytes from cur to the client in DATA frames of at
// most maxFrame bytes.
func (c *relayConn) writeData(id uint32, cur *segCursor, n, maxFrame int, endStream bool) error {
	c.downMu.Lock()
	defer c.downMu.Unlock()
	frames := max(1, (n+maxFrame-1)/maxFrame)
	for i := range frames {
		size := min(maxFrame, n-i*maxFrame)
		// A frame within one segment is written from where it is; one
		// that spans segments (a patch spliced in) is gathered first.
		var payload []byte
		pieces := 0
		cur.take(size, func(b []byte) {
			switch pieces {
			case 0:
				payload = b
			case 1:
				c.frameBuf = append(append(c.frameBuf[:0], payload...), b...)
				payload = c.frameBuf
			default:
				c.frameBuf = append(c.frameBuf, b...)
				payload = c.frameBuf
			}
			pieces++
		})
		if err := c.downFr.WriteData(id, endStream && i == frames-1, payload); err != nil {
			return err
		}
	}
	return nil
}

// segCursor reads forward through a list of byte slices.
type segCursor struct {
	segs [][]byte
	i    int // current slice
	off  int // offset in it
}

// take calls f with the next n bytes, in as many pieces as they span.
func (cur *segCursor) take(n int, f func([]byte)) {
	for n > 0 && cur.i < len(cur.segs) {
		s := cur.segs[cur.i][cur.off:]
		if len(s) > n {
			f(s[:n])
			cur.off += n
			return
		}
		if len(s) > 0 {
			f(s)
		}
		n -= len(s)
		cur.i, cur.off = cur.i+1, 0
	}
}
