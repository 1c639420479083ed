package crishim

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sandboxpin/sandboxpin/pin"
)

// Response kinds the patcher handles, as the fuzz target numbers them.
const (
	kindList = iota
	kindStream
	kindStatus
	numKinds
)

func newResponse(kind int) proto.Message {
	switch kind {
	case kindList:
		return new(runtimeapi.ListImagesResponse)
	case kindStream:
		return new(runtimeapi.StreamImagesResponse)
	default:
		return new(runtimeapi.ImageStatusResponse)
	}
}

func responseImages(msg proto.Message) []*runtimeapi.Image {
	switch r := msg.(type) {
	case *runtimeapi.ListImagesResponse:
		return r.GetImages()
	case *runtimeapi.StreamImagesResponse:
		return r.GetImages()
	case *runtimeapi.ImageStatusResponse:
		if r.GetImage() == nil {
			return nil
		}
		return []*runtimeapi.Image{r.GetImage()}
	}
	return nil
}

// patchMatchers are the rule sets the patcher is tried with.
func patchMatchers(t testing.TB) []*pin.Matcher {
	t.Helper()
	compile := func(patterns []string, opts ...pin.Option) *pin.Matcher {
		m, err := pin.Compile(patterns, opts...)
		require.NoError(t, err)
		return m
	}
	return []*pin.Matcher{
		testMatcher(t),
		nil,
		compile([]string{"*app*"}),
		compile([]string{fmt.Sprintf(idPattern, 2)}),
		compile([]string{"**"}, pin.WithMode(pin.ModeCRIOCompat)),
		compile([]string{"busybox"}, pin.WithMode(pin.ModeCRIOCompat)),
	}
}

// markPinned is the reference: the message decoded, pinned set as the
// matcher says, and how many images changed.
func markPinned(msg proto.Message, m *pin.Matcher) (proto.Message, int) {
	want := proto.Clone(msg)
	n := 0
	for _, img := range responseImages(want) {
		if !img.GetPinned() && m.IsPinnedImage(img) {
			img.Pinned = true
			n++
		}
	}
	return want, n
}

// checkPatch patches b and compares the result with decoding b, pinning
// the decoded images and (for canonical input) encoding them again.
// checkPieces checks planPieces and splicePieces on b cut into pieces of
// 0 to 16 bytes: they pin what patchPinned pinned (n images, got), or
// refuse the message (top-level fields that are not length-delimited).
func checkPieces(t *testing.T, b, got []byte, n int, m *pin.Matcher) {
	t.Helper()
	var bufs mem.BufferSlice
	for i, off := 0, 0; off < len(b) || i == 0; i++ {
		k := min((i*7)%17, len(b)-off)
		bufs = append(bufs, mem.Copy(b[off:off+k], mem.DefaultBufferPool()))
		off += k
	}
	p := new(patcher)
	if !p.planPieces(bufs, m, nil) {
		bufs.Free()
		return
	}
	require.Len(t, p.spans, n, "images pinned in pieces")
	if n == 0 {
		bufs.Free()
		return // the shim forwards bufs as they are
	}
	spliced := p.splicePieces(bufs)
	require.Equal(t, got, spliced.Materialize(), "spliced from pieces")
	spliced.Free()
}

func checkPatch(t *testing.T, b []byte, kind int, m *pin.Matcher) {
	msg := newResponse(kind)
	got, n, err := patchPinned(b, kind == kindStatus, m)
	if proto.Unmarshal(b, msg) != nil {
		return // not a message; the patcher only had not to panic
	}
	require.NoError(t, err, "the patcher fails on a message that decodes")
	want, wantN := markPinned(msg, m)
	require.Equal(t, wantN, n, "images pinned")
	if kind != kindStatus {
		checkPieces(t, b, got, n, m)
	}
	if n == 0 {
		require.Equal(t, b, got, "unchanged bytes")
		if len(b) > 0 {
			require.Same(t, &b[0], &got[0], "the original bytes, not a copy")
		}
		return
	}
	gotMsg := newResponse(kind)
	require.NoError(t, proto.Unmarshal(got, gotMsg), "the patched response decodes")

	// Spliced (the shim's way for a few images) is the same bytes.
	p := new(patcher)
	_, err = p.plan(b, kind == kindStatus, m, nil)
	require.NoError(t, err)
	spliced := p.splice(mem.Copy(b, mem.DefaultBufferPool()))
	require.Equal(t, got, spliced.Materialize(), "spliced")
	spliced.Free()
	require.True(t, proto.Equal(want, gotMsg), "patched:\n%v\nwant:\n%v", gotMsg, want)

	// For canonical input, patching equals marshalling the pinned message,
	// byte for byte, when the images have no unknown fields (which a
	// marshaller writes after pinned, the patcher before).
	for _, img := range responseImages(msg) {
		if len(img.ProtoReflect().GetUnknown()) > 0 {
			return
		}
	}
	det := proto.MarshalOptions{Deterministic: true}
	canon, err := det.Marshal(msg)
	require.NoError(t, err)
	patched, _, err := patchPinned(canon, kind == kindStatus, m)
	require.NoError(t, err)
	wantBytes, err := det.Marshal(want)
	require.NoError(t, err)
	require.Equal(t, wantBytes, patched, "patch(Marshal(msg)) == Marshal(pinned msg)")
}

// seedResponses are encoded responses that cover what the patcher must
// keep: unknown fields, explicit pinned false, merged image occurrences,
// long length prefixes.
func seedResponses(t testing.TB) []struct {
	name string
	kind int
	b    []byte
} {
	t.Helper()
	marshal := func(m proto.Message) []byte {
		b, err := proto.Marshal(m)
		require.NoError(t, err)
		return b
	}
	img := func(i int, tag string, pinned bool) *runtimeapi.Image {
		return &runtimeapi.Image{Id: fmt.Sprintf(idPattern, i), RepoTags: []string{tag}, Size: 42, Pinned: pinned,
			Spec: &runtimeapi.ImageSpec{Image: tag}}
	}
	list := marshal(&runtimeapi.ListImagesResponse{Images: []*runtimeapi.Image{
		img(1, tagPause, false), img(2, tagBusy, false), img(3, tagOwn, true), img(4, tagInfra, false),
	}})
	// An image with unknown fields (99: bytes, 100: varint) and an
	// explicit pinned = false, between two known images, plus an unknown
	// field of the response.
	odd := protowire.AppendTag(nil, imageTagsField, protowire.BytesType)
	odd = protowire.AppendString(odd, tagPause)
	odd = protowire.AppendTag(odd, 99, protowire.BytesType)
	odd = protowire.AppendString(odd, "future")
	odd = protowire.AppendTag(odd, imagePinnedField, protowire.VarintType)
	odd = protowire.AppendVarint(odd, 0)
	odd = protowire.AppendTag(odd, 100, protowire.VarintType)
	odd = protowire.AppendVarint(odd, 7)
	withUnknown := marshal(&runtimeapi.ListImagesResponse{Images: []*runtimeapi.Image{img(2, tagBusy, false)}})
	withUnknown = protowire.AppendTag(withUnknown, respImageField, protowire.BytesType)
	withUnknown = protowire.AppendBytes(withUnknown, odd)
	withUnknown = protowire.AppendTag(withUnknown, 5, protowire.Fixed32Type)
	withUnknown = protowire.AppendFixed32(withUnknown, 0xdeadbeef)
	withUnknown = append(withUnknown, marshal(&runtimeapi.ListImagesResponse{Images: []*runtimeapi.Image{img(4, tagInfra, false)}})...)

	// ImageStatusResponse with its image in two occurrences: the id in
	// the first, the tag in the second; decoding merges them.
	first := marshal(&runtimeapi.Image{Id: fmt.Sprintf(idPattern, 9)})
	second := marshal(&runtimeapi.Image{RepoTags: []string{tagPause}})
	split := protowire.AppendTag(nil, respImageField, protowire.BytesType)
	split = protowire.AppendBytes(split, first)
	split = append(split, marshal(&runtimeapi.ImageStatusResponse{Info: map[string]string{"k": "v"}})...)
	split = protowire.AppendTag(split, respImageField, protowire.BytesType)
	split = protowire.AppendBytes(split, second)

	// A length prefix written in more bytes than needed (legal).
	body := marshal(img(1, tagPause, false))
	long := protowire.AppendTag(nil, respImageField, protowire.BytesType)
	long = append(long, byte(len(body))|0x80, 0x80, 0x00) //nolint:gosec // G115: body is shorter than 128 bytes
	long = append(long, body...)

	// An image of 127 bytes, whose length prefix grows to two bytes.
	grow := &runtimeapi.Image{RepoTags: []string{tagPause}}
	for proto.Size(grow) < 127 {
		grow.Username += "u"
	}
	require.Equal(t, 127, proto.Size(grow))

	return []struct {
		name string
		kind int
		b    []byte
	}{
		{name: "list", kind: kindList, b: list},
		{name: "stream", kind: kindStream, b: list},
		{name: "status pause", kind: kindStatus, b: marshal(&runtimeapi.ImageStatusResponse{Image: img(1, tagPause, false), Info: map[string]string{"info": "x"}})},
		{name: "status busybox", kind: kindStatus, b: marshal(&runtimeapi.ImageStatusResponse{Image: img(2, tagBusy, false)})},
		{name: "status no image", kind: kindStatus, b: marshal(&runtimeapi.ImageStatusResponse{})},
		{name: "empty list", kind: kindList, b: nil},
		{name: "unknown fields", kind: kindList, b: withUnknown},
		{name: "split status", kind: kindStatus, b: split},
		{name: "long length prefix", kind: kindList, b: long},
		{name: "prefix grows", kind: kindList, b: marshal(&runtimeapi.ListImagesResponse{Images: []*runtimeapi.Image{grow}})},
		{name: "truncated", kind: kindList, b: list[:len(list)-3]},
	}
}

func TestPatchPinned(t *testing.T) {
	t.Parallel()
	ms := patchMatchers(t)
	for _, sr := range seedResponses(t) {
		for i, m := range ms {
			t.Run(fmt.Sprintf("%s/matcher%d", sr.name, i), func(t *testing.T) {
				t.Parallel()
				checkPatch(t, sr.b, sr.kind, m)
			})
		}
	}
}

// TestPatchPinnedBytes checks the bytes themselves: everything but the
// pinned image's length prefix and its added pinned field stays, and the
// runtime's own pins are never cleared.
func TestPatchPinnedBytes(t *testing.T) {
	t.Parallel()
	seeds := seedResponses(t)
	m := testMatcher(t)
	tests := []struct {
		name     string
		seed     int
		wantN    int
		wantErr  bool
		contains [][]byte // byte strings of the input that the output keeps
	}{
		{name: "list", seed: 0, wantN: 2},
		{name: "unknown fields", seed: 6, wantN: 2, contains: [][]byte{[]byte("future"), {0x2d, 0xef, 0xbe, 0xad, 0xde}}},
		{name: "truncated", seed: 10, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := seeds[tt.seed].b
			got, n, err := patchPinned(in, false, m)
			if tt.wantErr {
				require.ErrorIs(t, err, errMalformed)
				assert.Equal(t, in, got, "a malformed response passes unchanged")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantN, n)
			assert.Equal(t, len(in)+n*len(pinnedTrue), len(got), "two bytes per pinned image (no prefix grows here)")
			for _, c := range tt.contains {
				assert.Contains(t, string(got), string(c))
			}
			resp := new(runtimeapi.ListImagesResponse)
			require.NoError(t, proto.Unmarshal(got, resp))
			assert.True(t, pinnedByTag(resp.GetImages())[tagOwn] || tt.name != "list", "the runtime's own pin stays")
		})
	}
}

// TestPatchPinnedAllocs checks that patching allocates nothing when
// nothing changes and only the output when something does, whatever the
// number of images.
func TestPatchPinnedAllocs(t *testing.T) { //nolint:paralleltest // AllocsPerRun refuses parallel tests
	if raceEnabled {
		t.Skip("sync.Pool drops items at random under -race")
	}
	m := testMatcher(t)
	for _, n := range []int{10, 1000} {
		imgs := benchImages(n)
		pinned, err := proto.Marshal(&runtimeapi.ListImagesResponse{Images: imgs})
		require.NoError(t, err)
		imgs[0].Pinned = true
		unchanged, err := proto.Marshal(&runtimeapi.ListImagesResponse{Images: imgs})
		require.NoError(t, err)
		_, _, _ = patchPinned(pinned, false, m) // warm the pool
		assert.Zero(t, testing.AllocsPerRun(20, func() { _, _, _ = patchPinned(unchanged, false, m) }), "%d images, nothing to pin", n)
		assert.LessOrEqual(t, testing.AllocsPerRun(20, func() { _, _, _ = patchPinned(pinned, false, m) }), 1.0, "%d images, one to pin", n)
	}
}

// grpcBuffers returns b cut as gRPC hands a received message over: in
// buffers of 16 KiB, one per HTTP/2 DATA frame.
func grpcBuffers(b []byte) mem.BufferSlice {
	var bufs mem.BufferSlice
	for off := 0; off < len(b); off += 16 << 10 {
		bufs = append(bufs, mem.Copy(b[off:min(off+16<<10, len(b))], mem.DefaultBufferPool()))
	}
	return bufs
}

// TestRewriteAllocs measures what the shim allocates to pin the pause
// image in a ListImages answer of 1,000 and of 10,000 images, as gRPC
// hands it over: the same number of allocations for both (one more at most,
// a growth of the buffer list), and bytes that
// grow with the answer's buffers only (a slice entry per 16 KiB), not with
// its images. It keeps the least of five trials: goroutines that earlier
// tests left to wind down allocate too.
func TestRewriteAllocs(t *testing.T) { //nolint:paralleltest // measures the process's allocations
	if raceEnabled {
		t.Skip("sync.Pool drops items at random under -race")
	}
	s := &Shim{log: slog.New(slog.DiscardHandler)}
	s.store(testMatcher(t))
	const rounds = 20
	var allocs []uint64
	for _, n := range []int{1000, 10000} {
		b, err := proto.Marshal(&runtimeapi.ListImagesResponse{Images: benchImages(n)})
		require.NoError(t, err)
		count, bytes := uint64(math.MaxUint64), uint64(math.MaxUint64)
		for range 5 {
			frames := make([]*frame, rounds+1)
			for i := range frames {
				frames[i] = &frame{bufs: grpcBuffers(b)}
			}
			s.rewrite(context.Background(), methodListImages, frames[rounds]) // warm the pool
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for _, f := range frames[:rounds] {
				s.rewrite(context.Background(), methodListImages, f)
			}
			runtime.ReadMemStats(&after)
			count = min(count, (after.Mallocs-before.Mallocs)/rounds)
			bytes = min(bytes, (after.TotalAlloc-before.TotalAlloc)/rounds)
			for _, f := range frames {
				f.bufs.Free()
			}
		}
		t.Logf("%d images, %d bytes in %d buffers: %d allocations, %d bytes per answer", n, len(b), (len(b)+16<<10-1)/(16<<10), count, bytes)
		assert.LessOrEqual(t, bytes, uint64(len(b)/256), "%d images: bytes allocated, against the answer's %d", n, len(b))
		allocs = append(allocs, count)
	}
	// Ten times the buffers may cost the slice that lists them one more
	// growth (seen with gRPC v1.85.0 in the newest run: 4, then 5), but no
	// allocation per image or per buffer.
	assert.LessOrEqual(t, allocs[1], allocs[0]+1, "allocations for 1,000 and for 10,000 images")
}

func BenchmarkPatchPinned(b *testing.B) {
	m := testMatcher(b)
	for _, n := range []int{1000, 10000} {
		imgs := benchImages(n)
		pinned, err := proto.Marshal(&runtimeapi.ListImagesResponse{Images: imgs})
		require.NoError(b, err)
		b.Run(fmt.Sprintf("images=%d/patch", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(pinned)))
			for b.Loop() {
				if _, k, _ := patchPinned(pinned, false, m); k != 1 {
					b.Fatalf("pinned %d", k)
				}
			}
		})
		b.Run(fmt.Sprintf("images=%d/reencode", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(pinned)))
			for b.Loop() {
				var r runtimeapi.ListImagesResponse
				if err := proto.Unmarshal(pinned, &r); err != nil {
					b.Fatal(err)
				}
				for _, img := range r.GetImages() {
					if !img.GetPinned() && m.IsPinnedImage(img) {
						img.Pinned = true
					}
				}
				if _, err := proto.Marshal(&r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestPlanPiecesLarge checks planPieces and splicePieces on a large
// response cut as gRPC hands it over (16 KiB buffers), with images to pin
// in every part of it, more than maxSplices.
func TestPlanPiecesLarge(t *testing.T) {
	t.Parallel()
	m := testMatcher(t)
	imgs := benchImages(2000)
	for i := 0; i < len(imgs); i += 97 {
		imgs[i].RepoTags = append(imgs[i].RepoTags, "registry.example.com/infra/x:"+strconv.Itoa(i))
	}
	b, err := proto.Marshal(&runtimeapi.ListImagesResponse{Images: imgs})
	require.NoError(t, err)
	want, n, err := patchPinned(b, false, m)
	require.NoError(t, err)
	require.Equal(t, (len(imgs)+96)/97, n, "every 97th image, the pause image (0) among them")
	bufs := grpcBuffers(b)
	p := new(patcher)
	require.True(t, p.planPieces(bufs, m, nil))
	require.Len(t, p.spans, n)
	got := p.splicePieces(bufs)
	require.Equal(t, want, got.Materialize())
	got.Free()
}

// patchPinned returns b with pinned set on every image m pins that is not
// pinned yet, and how many images it pinned. When nothing changes it
// returns b itself. Everything else, unknown fields and field order
// included, stays byte for byte. single is true for ImageStatusResponse.
func patchPinned(b []byte, single bool, m *pin.Matcher) ([]byte, int, error) {
	if m == nil {
		return b, 0, nil
	}
	p := patchers.Get().(*patcher)
	defer patchers.Put(p)
	size, err := p.plan(b, single, m, nil)
	if err != nil || len(p.spans) == 0 {
		return b, 0, err
	}
	return p.apply(make([]byte, size), b), len(p.spans), nil
}
