package crishim

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The frame layer of the relay against golang.org/x/net/http2's Framer,
// on what the relay spends its frame work on: the runtime's answer to a
// ListImages of 10,000 images (2.8 MB in DATA frames of 16 KiB, the
// default SETTINGS_MAX_FRAME_SIZE), read and held whole, then written to
// the client in DATA frames of 16 KiB.

// frameBenchImages is the size of the answer the frame layers move.
const frameBenchImages = 10000

// listImagesFrames returns the runtime's DATA frames of a ListImages answer
// with n images on stream 1, and the gRPC message's length.
func listImagesFrames(tb testing.TB, n int) ([]byte, int) {
	tb.Helper()
	body, err := proto.Marshal(&runtimeapi.ListImagesResponse{Images: benchImages(n)})
	require.NoError(tb, err)
	msg := make([]byte, grpcMsgHeaderLen, grpcMsgHeaderLen+len(body))
	binary.BigEndian.PutUint32(msg[1:], uint32(len(body))) //nolint:gosec // G115: a few MB
	msg = append(msg, body...)
	var stream []byte
	for off := 0; off < len(msg); off += defaultMaxFrame {
		chunk := msg[off:min(off+defaultMaxFrame, len(msg))]
		stream = appendFrameHeader(stream, len(chunk), frameData, 0, 1)
		stream = append(stream, chunk...)
	}
	return stream, len(msg)
}

// handFrames moves stream as the relay does: frameReader headers, DATA read
// straight into the held message, and the message written out as frame
// headers and slices of it in one writev (relayConn.writeData).
func handFrames(stream []byte, held []byte, out io.Writer) ([]byte, error) {
	fr := &frameReader{r: bufio.NewReaderSize(bytes.NewReader(stream), relayBufferSize)}
	held = held[:0]
	for {
		h, err := fr.headerWithin(defaultMaxFrame, "runtime")
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return held, err
		}
		n := len(held)
		held = grow(held, int(h.length))
		if _, err := io.ReadFull(fr.r, held[n:]); err != nil {
			return held, err
		}
	}
	frames := (len(held) + defaultMaxFrame - 1) / defaultMaxFrame
	hdrs := make([]byte, 0, frames*frameHeaderLen)
	iov := make(net.Buffers, 0, 2*frames)
	for off := 0; off < len(held); off += defaultMaxFrame {
		size := min(defaultMaxFrame, len(held)-off)
		start := len(hdrs)
		hdrs = appendFrameHeader(hdrs, size, frameData, 0, 1)
		iov = append(iov, hdrs[start:], held[off:off+size])
	}
	_, err := iov.WriteTo(out)
	return held, err
}

// framerFrames moves stream with http2.Framer: ReadFrame, the DATA payload
// appended to the held message, then WriteData per 16 KiB.
func framerFrames(stream []byte, held []byte, out io.Writer) ([]byte, error) {
	w := bufio.NewWriterSize(out, relayBufferSize)
	fr := http2.NewFramer(w, bufio.NewReaderSize(bytes.NewReader(stream), relayBufferSize))
	held = held[:0]
	for {
		f, err := fr.ReadFrame()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return held, err
		}
		df, ok := f.(*http2.DataFrame)
		if !ok {
			return held, fmt.Errorf("frame %v", f.Header())
		}
		held = append(held, df.Data()...)
	}
	for off := 0; off < len(held); off += defaultMaxFrame {
		if err := fr.WriteData(1, false, held[off:min(off+defaultMaxFrame, len(held))]); err != nil {
			return held, err
		}
	}
	return held, w.Flush()
}

// frameLayers are the two frame layers measured.
var frameLayers = []struct {
	name string
	move func(stream, held []byte, out io.Writer) ([]byte, error)
}{
	{name: "hand-written", move: handFrames},
	{name: "x-net-http2-Framer", move: framerFrames},
}

// countWriter counts what is written to it.
type countWriter struct{ n int }

func (c *countWriter) Write(p []byte) (int, error) {
	c.n += len(p)
	return len(p), nil
}

func TestFrameLayers(t *testing.T) {
	t.Parallel()
	stream, msgLen := listImagesFrames(t, 100)
	for _, fl := range frameLayers {
		t.Run(fl.name, func(t *testing.T) {
			t.Parallel()
			var out countWriter
			held, err := fl.move(stream, nil, &out)
			require.NoError(t, err)
			require.Len(t, held, msgLen, "held message")
			require.Equal(t, len(stream), out.n, "bytes written: the same frames")
		})
	}
}

// BenchmarkFrameLayer moves a 10,000-image ListImages answer through each
// frame layer.
func BenchmarkFrameLayer(b *testing.B) {
	stream, _ := listImagesFrames(b, frameBenchImages)
	for _, fl := range frameLayers {
		b.Run(fl.name, func(b *testing.B) {
			var held []byte
			b.SetBytes(int64(len(stream)))
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if held, err = fl.move(stream, held, io.Discard); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestFramerCost compares the two frame layers with a 10,000-image
// ListImages through the shim, in one run, and logs what the Framer does
// add to the call: the bar for going back to hand-written frames is
// more than 5 %.
func TestFramerCost(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("benchmarks; -short or -race")
	}
	stream, _ := listImagesFrames(t, frameBenchImages)
	per := map[string]time.Duration{}
	for _, fl := range frameLayers {
		r := testing.Benchmark(func(b *testing.B) {
			var held []byte
			for b.Loop() {
				var err error
				if held, err = fl.move(stream, held, io.Discard); err != nil {
					b.Fatal(err)
				}
			}
		})
		per[fl.name] = time.Duration(r.NsPerOp())
	}
	targets := hopSetup(t, frameBenchImages)
	client := runtimeapi.NewImageServiceClient(dial(t, targets[3].path)) // the shim
	ctx := testContext(t)
	med := medians(t, envInt(t, "SANDBOXPIN_HOP_ROUNDS", hopRounds), 1, func(int) error {
		return hopCalls[0].call(ctx, client, frameBenchImages, true)
	})[0]
	hand, framer := per["hand-written"], per["x-net-http2-Framer"]
	t.Logf("10,000-image ListImages (%d B of DATA frames): hand-written frames %v, x/net/http2 Framer %v (%.2fx); the call through the shim %v: the Framer adds %.1f %% to it",
		len(stream), hand, framer, float64(framer)/float64(hand), med, 100*float64(framer-hand)/float64(med))
}
