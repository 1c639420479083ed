package crishim

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// The hand-written frame layer the relay used before it read and wrote
// frames with golang.org/x/net/http2's Framer (RFC 9113 sections 4.1 and
// 6): the baseline of BenchmarkFrameLayer, and the tests' frame reader.

// Frame types.
const (
	frameData         = 0x0
	frameHeaders      = 0x1
	frameRSTStream    = 0x3
	frameSettings     = 0x4
	framePushPromise  = 0x5
	frameGoAway       = 0x7
	frameWindowUpdate = 0x8
	frameContinuation = 0x9
)

// Frame flags.
const (
	flagEndStream  = 0x1 // DATA, HEADERS
	flagAck        = 0x1 // SETTINGS, PING
	flagEndHeaders = 0x4 // HEADERS, PUSH_PROMISE, CONTINUATION
	flagPadded     = 0x8 // DATA, HEADERS
	flagPriority   = 0x20
)

const (
	frameHeaderLen = 9
)

// frameHeader is a frame's 9-byte header, decoded.
type frameHeader struct {
	length uint32
	typ    uint8
	flags  uint8
	stream uint32
}

// frameReader reads frames: first the header, then the payload, into a
// buffer of the caller's or into its own, reused.
type frameReader struct {
	r   *bufio.Reader
	hdr [frameHeaderLen]byte
	buf []byte
	// peeked is how many bytes of r's buffer the last payload returned in
	// place: they are consumed at the next header.
	peeked int
}

// header reads the next frame's header.
func (fr *frameReader) header() (frameHeader, error) {
	if fr.peeked > 0 {
		_, _ = fr.r.Discard(fr.peeked) // buffered already: cannot fail
		fr.peeked = 0
	}
	if _, err := io.ReadFull(fr.r, fr.hdr[:]); err != nil {
		return frameHeader{}, err
	}
	return frameHeader{
		length: uint32(fr.hdr[0])<<16 | uint32(fr.hdr[1])<<8 | uint32(fr.hdr[2]),
		typ:    fr.hdr[3],
		flags:  fr.hdr[4],
		stream: binary.BigEndian.Uint32(fr.hdr[5:]) & maxWindow,
	}, nil
}

// headerWithin reads the next frame's header, and fails a frame larger
// than limit, the receiver's largest SETTINGS_MAX_FRAME_SIZE; from names
// the sender for the error.
func (fr *frameReader) headerWithin(limit uint32, from string) (frameHeader, error) {
	h, err := fr.header()
	if err == nil && h.length > limit {
		err = fmt.Errorf("%w: %s frame of %d bytes on stream %d from the %s, over the peer's frame size %d",
			errH2, frameName(h.typ), h.length, h.stream, from, limit)
	}
	return h, err
}

// payload reads the payload of the frame h, valid until the next call of
// header: in place in the reader's buffer when it fits there, else in a
// buffer of its own.
func (fr *frameReader) payload(h frameHeader) ([]byte, error) {
	n := int(h.length)
	if n <= fr.r.Size() {
		p, err := fr.r.Peek(n)
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, fmt.Errorf("%s frame of %d bytes on stream %d: %w", frameName(h.typ), h.length, h.stream, err)
		}
		fr.peeked = n
		return p, nil
	}
	if cap(fr.buf) < n {
		fr.buf = make([]byte, n)
	}
	p := fr.buf[:n]
	if _, err := io.ReadFull(fr.r, p); err != nil {
		return nil, fmt.Errorf("%s frame of %d bytes on stream %d: %w", frameName(h.typ), h.length, h.stream, err)
	}
	return p, nil
}

// frameName names a frame type for errors.
func frameName(typ uint8) string {
	names := [...]string{"DATA", "HEADERS", "PRIORITY", "RST_STREAM", "SETTINGS", "PUSH_PROMISE", "PING", "GOAWAY", "WINDOW_UPDATE", "CONTINUATION"}
	if int(typ) < len(names) {
		return names[typ]
	}
	return fmt.Sprintf("type-%#x", typ)
}

// appendFrameHeader appends a frame header. length fits in 24 bits: no
// frame the relay writes is larger than a peer's frame size, at most
// 2^24-1 (RFC 9113 section 6.5.2).
func appendFrameHeader(b []byte, length int, typ, flags uint8, stream uint32) []byte { //nolint:unparam // the layout has a stream; the tests use stream 1
	l := uint32(length) & (1<<24 - 1) //nolint:gosec // G115: see above
	b = binary.BigEndian.AppendUint32(b, l<<8|uint32(typ))
	b = append(b, flags)
	return binary.BigEndian.AppendUint32(b, stream)
}
