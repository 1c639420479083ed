package cri

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sandboxpin/sandboxpin/criinfo"
	"github.com/sandboxpin/sandboxpin/criinfo/cri/fakecri"
)

// A hostile runtime: Status answers with Info that is huge or nested far
// deeper than any runtime's, ListImages with responses at and over the
// message size limits. Every call must end, with a clear error or a bounded
// answer, within hostileDeadline; memory is checked against a bound per case.

// hostileDeadline is the context deadline of each call: a 20 MiB answer
// takes about a second on a loaded 2-core machine, under -race a few.
const hostileDeadline = 30 * time.Second

// hostileGrace is how long after hostileDeadline a call may still run
// before the test gives up on it: code that ignores its context hangs.
const hostileGrace = 10 * time.Second

// deepLevels is the nesting of the deep configs: 100,000 levels is 1,500
// times criinfo.MaxDepth, and a recursive decoder (encoding/json's Unmarshal
// into an interface stops at 10,000) would have to give up too.
const deepLevels = 100_000

// validConfig is a config that parses, for the Info that is large but
// otherwise what a runtime reports.
const validConfig = `{"sandboxImage":"registry.k8s.io/pause:3.10.1","containerdEndpoint":"/run/containerd/containerd.sock"}`

// withConfig returns info with "config" set to config.
func withConfig(info map[string]string, config string) map[string]string {
	info["config"] = config
	return info
}

// manyMembers returns a config object with members "k0000000":0, ... up to
// size bytes.
func manyMembers(size int) string {
	var b strings.Builder
	b.Grow(size + 16)
	b.WriteByte('{')
	for i := 0; b.Len() < size-16; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"k%07d":0`, i)
	}
	b.WriteByte('}')
	return b.String()
}

// hostileInfos are the Status answers, shared by the behaviour and the
// memory tests.
var hostileInfos = []struct {
	name    string
	info    map[string]string // StatusResponse.Info
	want    string            // SandboxImage reported, when no error is wanted
	wantErr error             // sentinel expected with errors.Is, or nil
	// maxAlloc bounds the bytes Query allocates (runtime.MemStats
	// TotalAlloc; the fake marshalled its answer in Serve). An answer the
	// client reads is held three times: the receive buffer, the decoded
	// strings, Parse's copy of config. The bound is six times its size
	// plus 32 MiB, for gRPC's buffers (fresh ones when its pools miss, as
	// they often do under -race: the shim's like test once measured 7.5
	// times in CI, twice its usual figure), the growth of the map and the scanner's
	// garbage (MaxTokens tokens, about 10 MiB). An answer over 16 MiB is
	// never held: the client reads its 5-byte length and no further; 8 MiB
	// is for buffers. Measured: deep 0–2 MiB, 15 MiB answers 45–71 MiB,
	// refused 0 MiB.
	maxAlloc uint64
}{
	{
		name:    "config 100,000 objects deep",
		info:    map[string]string{"config": fakecri.DeepObject(deepLevels)},
		wantErr: criinfo.ErrTooDeep,
		// 600 KB held four times, and the scanner stops at level 65.
		maxAlloc: 16 << 20,
	},
	{
		name:     "config holding arrays 100,000 deep",
		info:     map[string]string{"config": `{"a":` + fakecri.DeepArray(deepLevels) + `}`},
		wantErr:  criinfo.ErrTooDeep,
		maxAlloc: 16 << 20,
	},
	{
		name:     "config opened 100,000 times and never closed",
		info:     map[string]string{"config": `{"a":` + strings.Repeat(`{"a":[`, deepLevels)},
		wantErr:  criinfo.ErrTooDeep,
		maxAlloc: 16 << 20,
	},
	{
		name:     "15 MiB of keys beside a valid config",
		info:     withConfig(fakecri.FillerInfo(15<<20, 4<<10), validConfig),
		want:     "registry.k8s.io/pause:3.10.1",
		maxAlloc: 6*15<<20 + 32<<20,
	},
	{
		name:     "one 15 MiB value beside a valid config",
		info:     map[string]string{"lastCNILoadStatus": strings.Repeat("x", 15<<20), "config": validConfig},
		want:     "registry.k8s.io/pause:3.10.1",
		maxAlloc: 6*15<<20 + 32<<20,
	},
	{
		name:    "config with 15 MiB of members",
		info:    map[string]string{"config": manyMembers(15 << 20)},
		wantErr: criinfo.ErrTooLarge,
		// Before criinfo.MaxTokens: 423 MiB, a heap peak of 157 MiB, 4 s.
		maxAlloc: 6*15<<20 + 32<<20,
	},
	{
		name:     "20 MiB of keys, over the message limit",
		info:     fakecri.FillerInfo(20<<20, 4<<10),
		wantErr:  criinfo.ErrTooLarge,
		maxAlloc: 8 << 20,
	},
}

// within runs f and fails the test when f has not returned hostileGrace
// after hostileDeadline: f hangs. It returns f's result otherwise.
func within[T any](t *testing.T, f func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- f() }()
	select {
	case v := <-done:
		return v
	case <-time.After(hostileDeadline + hostileGrace):
		t.Fatalf("still running %v after its context's deadline", hostileGrace)
		panic("unreachable")
	}
}

// infoResult is what Query returned.
type infoResult struct {
	info criinfo.Info
	err  error
	took time.Duration
}

// queryHostile asks the runtime serving info, through Query.
func queryHostile(t *testing.T, endpoint string) infoResult {
	t.Helper()
	return within(t, func() infoResult {
		ctx, cancel := context.WithTimeout(context.Background(), hostileDeadline)
		defer cancel()
		start := time.Now()
		info, err := Query(ctx, endpoint)
		return infoResult{info, err, time.Since(start)}
	})
}

func TestHostileRuntimeInfo(t *testing.T) {
	t.Parallel()
	for _, tt := range hostileInfos {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			endpoint := "unix://" + fakecri.Serve(t, &fakecri.Runtime{RuntimeName: "containerd", RuntimeVersion: "v2.2.9", Info: tt.info})
			got := queryHostile(t, endpoint)
			t.Logf("Query took %v", got.took)
			if tt.wantErr == nil {
				require.NoError(t, got.err)
				assert.Equal(t, tt.want, got.info.SandboxImage)
				assert.Equal(t, criinfo.RuntimeContainerd, got.info.Runtime)
				return
			}
			require.ErrorIs(t, got.err, tt.wantErr)
			assert.Zero(t, got.info)
			var ce *Error
			require.ErrorAs(t, got.err, &ce)
			assert.Equal(t, rpcStatus, ce.RPC)
			assert.NotContains(t, got.err.Error(), "\n", "a one-line error")
			assert.Less(t, len(got.err.Error()), 512, "the error does not quote the input: %.600s", got.err)
		})
	}
}

// TestHostileRuntimeInfoMemory measures what Query allocates with each
// hostile Info. It does not run in parallel: the figures are the process's.
func TestHostileRuntimeInfoMemory(t *testing.T) {
	for _, tt := range hostileInfos {
		t.Run(tt.name, func(t *testing.T) {
			endpoint := "unix://" + fakecri.Serve(t, &fakecri.Runtime{RuntimeName: "containerd", RuntimeVersion: "v2.2.9", Info: tt.info})
			var got infoResult
			a := fakecri.MeasureAlloc(func() { got = queryHostile(t, endpoint) })
			t.Logf("Query took %v, allocated %d MiB, heap peak +%d MiB: %v", got.took, a.Total>>20, a.PeakHeap>>20, got.err)
			assert.ErrorIs(t, got.err, tt.wantErr)
			assert.LessOrEqual(t, a.Total, tt.maxAlloc, "Query allocated %d MiB, bound %d MiB", a.Total>>20, tt.maxAlloc>>20)
		})
	}
}

// hostileLists are the ListImages answers, by size of the response.
var hostileLists = []struct {
	name     string
	size     int        // bytes of the ListImagesResponse
	wantCode codes.Code // gRPC code of the error, codes.OK for the images
}{
	{name: "at gRPC's default limit", size: 4 << 20},
	{name: "just over gRPC's default limit", size: 4<<20 + 1},
	{name: "at the 16 MiB limit", size: maxMsgSize},
	{name: "just over the 16 MiB limit", size: maxMsgSize + 1, wantCode: codes.ResourceExhausted},
	{name: "20 MiB", size: 20 << 20, wantCode: codes.ResourceExhausted},
}

func TestHostileRuntimeImages(t *testing.T) {
	t.Parallel()
	for _, tt := range hostileLists {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			images := fakecri.ImagesOfSize(tt.size)
			c, err := Dial(context.Background(), fakecri.Serve(t, &fakecri.Runtime{Images: images}))
			require.NoError(t, err)
			t.Cleanup(func() { _ = c.Close() })
			type result struct {
				n   int
				err error
			}
			got := within(t, func() result {
				ctx, cancel := context.WithTimeout(context.Background(), hostileDeadline)
				defer cancel()
				imgs, err := c.Images(ctx)
				return result{len(imgs), err}
			})
			if tt.wantCode == codes.OK {
				require.NoError(t, got.err)
				assert.Equal(t, len(images), got.n)
				return
			}
			assert.Equal(t, tt.wantCode, status.Code(got.err), "Images() error = %v", got.err)
			assert.Zero(t, got.n)
			var ce *Error
			require.ErrorAs(t, got.err, &ce)
			assert.Equal(t, rpcListImages, ce.RPC)
			assert.Contains(t, got.err.Error(), fmt.Sprintf("%d vs. %d", tt.size, maxMsgSize), "the error names both sizes")
		})
	}
}

// TestHostileRuntimeImagesMemory measures what Images allocates. It does not
// run in parallel: the figures are the process's. The bound is that of
// hostileInfos: a list the client reads is held three times (the receive
// buffer, and the decoded images, whose structs and slices take about as
// much again as their strings), bounded by six times plus 32 MiB; a list it
// refuses is never held, 8 MiB. Measured: 4 MiB lists 12–16 MiB, the 16 MiB
// list 64 MiB, refused lists 0 MiB.
func TestHostileRuntimeImagesMemory(t *testing.T) {
	for _, tt := range hostileLists {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Dial(context.Background(), fakecri.Serve(t, &fakecri.Runtime{Images: fakecri.ImagesOfSize(tt.size)}))
			require.NoError(t, err)
			t.Cleanup(func() { _ = c.Close() })
			a := fakecri.MeasureAlloc(func() {
				err = within(t, func() error {
					ctx, cancel := context.WithTimeout(context.Background(), hostileDeadline)
					defer cancel()
					_, err := c.Images(ctx)
					return err
				})
			})
			t.Logf("allocated %d MiB, heap peak +%d MiB: %v", a.Total>>20, a.PeakHeap>>20, err)
			assert.Equal(t, tt.wantCode, status.Code(err))
			bound := uint64(8 << 20)
			if tt.wantCode == codes.OK {
				bound = 6*uint64(tt.size) + 32<<20 //nolint:gosec // tt.size is a table constant, positive and under 32 MiB
			}
			assert.LessOrEqual(t, a.Total, bound, "Images allocated %d MiB, bound %d MiB", a.Total>>20, bound>>20)
		})
	}
}
