package crishim

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/pin"
)

// The fuzz targets of the patcher and the relay; their seeds are the
// package's response tables and the files under testdata/fuzz.

// FuzzPatchPinned patches random bytes as each response kind with each
// matcher: whatever decodes must decode, patched, to the decoded message
// with pinned set as the matcher says, and canonical input must patch to
// exactly what marshalling the pinned message gives.
func FuzzPatchPinned(f *testing.F) {
	for _, sr := range seedResponses(f) {
		f.Add(sr.b, uint8(sr.kind), uint8(0)) //nolint:gosec // G115: kinds are 0 to 2
	}
	ms := patchMatchers(f)
	f.Fuzz(func(t *testing.T, b []byte, kind, matcher uint8) {
		checkPatch(t, b, int(kind)%numKinds, ms[int(matcher)%len(ms)])
	})
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
// panic, and only whole frames passed on. Seeds: testdata/fuzz.
func FuzzRelayRequests(f *testing.F) {
	f.Add([]byte{})
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
