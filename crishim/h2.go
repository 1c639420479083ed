package crishim

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// The little of HTTP/2 the relay needs to read and write frames: their
// layout and types (RFC 9113 sections 4.1 and 6). The relay never encodes
// a header block (see relay.go).

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

// Settings the relay reads (RFC 9113 section 6.5.2).
const (
	settingHeaderTableSize   = 0x1
	settingInitialWindowSize = 0x4
	settingMaxFrameSize      = 0x5
)

const (
	frameHeaderLen = 9
	// Defaults of the settings until a peer sends its own.
	defaultWindow     = 65535
	defaultMaxFrame   = 16384
	defaultHeaderSize = 4096
	maxWindow         = 1<<31 - 1
	clientPreface     = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
)

// errH2 is a frame the relay cannot pass on: the connection ends.
var errH2 = errors.New("HTTP/2 protocol error")

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

// buffered returns how many bytes past the last frame are buffered: none
// means the next header will wait for the peer.
func (fr *frameReader) buffered() int {
	return fr.r.Buffered() - fr.peeked
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
func appendFrameHeader(b []byte, length int, typ, flags uint8, stream uint32) []byte {
	l := uint32(length) & (1<<24 - 1) //nolint:gosec // G115: see above
	b = binary.BigEndian.AppendUint32(b, l<<8|uint32(typ))
	b = append(b, flags)
	return binary.BigEndian.AppendUint32(b, stream)
}

// appendWindowUpdate appends a WINDOW_UPDATE frame.
func appendWindowUpdate(b []byte, stream uint32, inc uint32) []byte {
	b = appendFrameHeader(b, 4, frameWindowUpdate, 0, stream)
	return binary.BigEndian.AppendUint32(b, inc)
}

// unpad returns the data of a DATA frame without its padding.
func unpad(h frameHeader, p []byte) ([]byte, error) {
	if h.flags&flagPadded == 0 {
		return p, nil
	}
	if len(p) < 1 || int(p[0]) > len(p)-1 {
		return nil, fmt.Errorf("%w: DATA on stream %d: padding longer than the frame", errH2, h.stream)
	}
	return p[1 : len(p)-int(p[0])], nil
}

// headerFragment returns the header block fragment of a HEADERS frame,
// without padding and priority.
func headerFragment(h frameHeader, p []byte) ([]byte, error) {
	pad := 0
	if h.flags&flagPadded != 0 {
		if len(p) < 1 {
			return nil, fmt.Errorf("%w: HEADERS on stream %d: no pad length", errH2, h.stream)
		}
		pad = int(p[0])
		p = p[1:]
	}
	if h.flags&flagPriority != 0 {
		if len(p) < 5 {
			return nil, fmt.Errorf("%w: HEADERS on stream %d: short priority", errH2, h.stream)
		}
		p = p[5:]
	}
	if pad > len(p) {
		return nil, fmt.Errorf("%w: HEADERS on stream %d: padding longer than the frame", errH2, h.stream)
	}
	return p[:len(p)-pad], nil
}

// settings calls f with each setting of a SETTINGS payload.
func settings(p []byte, f func(id uint16, v uint32)) error {
	if len(p)%6 != 0 {
		return fmt.Errorf("%w: SETTINGS of %d bytes", errH2, len(p))
	}
	for ; len(p) >= 6; p = p[6:] {
		f(binary.BigEndian.Uint16(p), binary.BigEndian.Uint32(p[2:]))
	}
	return nil
}
