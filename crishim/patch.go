package crishim

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/sandboxpin/sandboxpin/pin"
)

// Field numbers of the messages the patcher walks, as in
// k8s.io/cri-api v0.36.6 pkg/apis/runtime/v1/api.proto (checked against that
// file):
//
//	message ListImagesResponse   { repeated Image images = 1; }
//	message StreamImagesResponse { repeated Image images = 1; }
//	message ImageStatusResponse  { Image image = 1; map<string, string> info = 2; }
//	message Image { string id = 1; repeated string repo_tags = 2;
//	                repeated string repo_digests = 3; uint64 size = 4;
//	                Int64Value uid = 5; string username = 6; ImageSpec spec = 7;
//	                bool pinned = 8; }
//
// Note that pinned is field 8, not 7 (7 is spec).
const (
	respImageField    protowire.Number = 1
	imageIDField      protowire.Number = 1
	imageTagsField    protowire.Number = 2
	imageDigestsField protowire.Number = 3
	imagePinnedField  protowire.Number = 8
)

// pinnedTrue is "pinned: true" on the wire: the tag of field 8 as a varint,
// then 1. Appended after an image's other fields it wins over any earlier
// pinned (the last value of a scalar field wins when decoding).
var pinnedTrue = protowire.AppendVarint(protowire.AppendTag(nil, imagePinnedField, protowire.VarintType), 1)

// errMalformed is returned for a response that is not a valid encoding.
var errMalformed = errors.New("malformed protobuf")

// wireImage is a [pin.Image] over an encoded Image: its strings point into
// the response's bytes (no copy), valid while those bytes are. One wireImage
// is reused for every image of a response.
type wireImage struct {
	id      string
	tags    []string
	digests []string
	pinned  bool
}

var _ pin.Image = (*wireImage)(nil)

func (w *wireImage) GetId() string            { return w.id } //nolint:revive // the cri-api getter name
func (w *wireImage) GetRepoTags() []string    { return w.tags }
func (w *wireImage) GetRepoDigests() []string { return w.digests }

// reset empties w for the next image of the same response.
func (w *wireImage) reset() {
	*w = wireImage{tags: w.tags[:0], digests: w.digests[:0]}
}

// release drops w's references into a response's bytes, once the response
// is done, so that a pooled patcher does not keep them alive.
func (w *wireImage) release() {
	clear(w.tags[:cap(w.tags)])
	clear(w.digests[:cap(w.digests)])
	w.reset()
}

// add reads the fields of one encoded Image into w, as decoding it into
// the same message would: id and pinned keep their last value, tags and
// digests accumulate. Fields of another wire type than the schema's are
// unknown fields to a decoder, and ignored here too.
func (w *wireImage) add(b []byte) error {
	for len(b) > 0 {
		num, typ, n := consumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		switch typ {
		case protowire.BytesType:
			v, n := consumeBytes(b)
			if n < 0 {
				return protowire.ParseError(n)
			}
			switch num {
			case imageIDField:
				w.id = bytesString(v)
			case imageTagsField:
				w.tags = append(w.tags, bytesString(v))
			case imageDigestsField:
				w.digests = append(w.digests, bytesString(v))
			}
			b = b[n:]
		case protowire.VarintType:
			v, n := consumeVarint(b)
			if n < 0 {
				return protowire.ParseError(n)
			}
			if num == imagePinnedField {
				w.pinned = protowire.DecodeBool(v)
			}
			b = b[n:]
		default:
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return protowire.ParseError(n)
			}
			b = b[n:]
		}
	}
	return nil
}

// consumeTag is protowire.ConsumeTag, inlined for the one-byte tags of
// fields 1 to 15, which are all the fields of an Image.
func consumeTag(b []byte) (protowire.Number, protowire.Type, int) {
	if len(b) > 0 && b[0] >= 1<<3 && b[0] < 0x80 {
		return protowire.Number(b[0] >> 3), protowire.Type(b[0] & 7), 1
	}
	return protowire.ConsumeTag(b)
}

// consumeVarint is protowire.ConsumeVarint, inlined for one byte.
func consumeVarint(b []byte) (uint64, int) {
	if len(b) > 0 && b[0] < 0x80 {
		return uint64(b[0]), 1
	}
	return protowire.ConsumeVarint(b)
}

// consumeBytes is protowire.ConsumeBytes, inlined for the one- and
// two-byte length prefixes of strings and images under 16 KiB.
func consumeBytes(b []byte) ([]byte, int) {
	var l, n int
	switch {
	case len(b) > 0 && b[0] < 0x80:
		l, n = int(b[0]), 1
	case len(b) > 1 && b[1] < 0x80:
		l, n = int(b[0]&0x7f)|int(b[1])<<7, 2
	default:
		return protowire.ConsumeBytes(b)
	}
	if l > len(b)-n {
		return protowire.ConsumeBytes(b) // its error
	}
	return b[n : n+l], n + l
}

// bytesString returns b as a string without copying. The patcher only
// reads b, and the matcher keeps no string it is given.
func bytesString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// span is an encoded image to pin: the bytes of its tag, and of its value
// (without the length prefix).
type span struct {
	tagStart, tagEnd, valStart, valEnd int
}

// patcher sets pinned in encoded responses. It holds scratch space reused
// from one response to the next; get one from patchers.
type patcher struct {
	img   wireImage
	spans []span
	// For messages received in several buffers (planPieces).
	pieces     [][]byte
	starts     []int
	hdr, value []byte // scratch for what crosses buffers
}

var patchers = sync.Pool{New: func() any { return new(patcher) }}

// plan walks the encoded response b, whose images are field 1 (repeated
// when single is false: ListImagesResponse, StreamImagesResponse; one
// image when single is true: ImageStatusResponse, whose occurrences of
// field 1 merge into one image), and finds the images m pins that are not
// pinned yet. It returns the size of the patched response and the spans to
// patch; none when nothing changes. onPin, if not nil, is called with each
// image to pin while its strings are valid.
func (p *patcher) plan(b []byte, single bool, m *pin.Matcher, onPin func(*wireImage)) (size int, err error) {
	p.spans = p.spans[:0]
	w := &p.img
	w.reset()
	defer w.release()
	var last span // ImageStatusResponse: the last occurrence of the image
	seen := false
	for off := 0; off < len(b); {
		num, typ, n := consumeTag(b[off:])
		if n < 0 {
			return 0, fmt.Errorf("%w: field tag at offset %d: %w", errMalformed, off, protowire.ParseError(n))
		}
		tagStart := off
		if num != respImageField || typ != protowire.BytesType {
			n2 := protowire.ConsumeFieldValue(num, typ, b[off+n:])
			if n2 < 0 {
				return 0, fmt.Errorf("%w: field %d at offset %d: %w", errMalformed, num, tagStart, protowire.ParseError(n2))
			}
			off += n + n2
			continue
		}
		v, n2 := consumeBytes(b[off+n:])
		if n2 < 0 {
			return 0, fmt.Errorf("%w: image at offset %d: %w", errMalformed, tagStart, protowire.ParseError(n2))
		}
		off += n
		sp := span{tagStart: tagStart, tagEnd: off, valStart: off + n2 - len(v), valEnd: off + n2}
		off += n2
		if !single {
			w.reset()
		}
		if err := w.add(v); err != nil {
			return 0, fmt.Errorf("%w: image at offset %d: %w", errMalformed, tagStart, err)
		}
		if single {
			last, seen = sp, true
			continue
		}
		if !w.pinned && m.IsPinnedImage(w) {
			p.spans = append(p.spans, sp)
			if onPin != nil {
				onPin(w)
			}
		}
	}
	if single && seen && !w.pinned && m.IsPinnedImage(w) {
		p.spans = append(p.spans, last)
		if onPin != nil {
			onPin(w)
		}
	}
	return p.size(b), nil
}

// size returns the size of b patched as p.spans say.
func (p *patcher) size(b []byte) int {
	size := len(b)
	for _, sp := range p.spans {
		oldLen := sp.valEnd - sp.valStart
		size += protowire.SizeVarint(length(oldLen+len(pinnedTrue))) - protowire.SizeVarint(length(oldLen)) + len(pinnedTrue)
		// A length prefix longer than minimal (legal, never written by
		// protobuf encoders) is rewritten minimal: account for it.
		size -= sp.valStart - sp.tagStart - tagLen(b[sp.tagStart:]) - protowire.SizeVarint(length(oldLen))
	}
	return size
}

// length returns n, a length, as a varint's value.
func length(n int) uint64 {
	return uint64(n) //nolint:gosec // G115: a length is never negative
}

// tagLen returns the length of the tag at the start of b, valid by now.
func tagLen(b []byte) int {
	_, _, n := protowire.ConsumeTag(b)
	return n
}

// apply writes b, patched as plan found, into out, which has the size plan
// returned, and returns it.
func (p *patcher) apply(out, b []byte) []byte {
	out = out[:0]
	copied := 0
	for _, sp := range p.spans {
		n := tagLen(b[sp.tagStart:])
		out = append(out, b[copied:sp.tagStart+n]...)
		out = protowire.AppendVarint(out, length(sp.valEnd-sp.valStart+len(pinnedTrue)))
		out = append(out, b[sp.valStart:sp.valEnd]...)
		out = append(out, pinnedTrue...)
		copied = sp.valEnd
	}
	return append(out, b[copied:]...)
}

// maxSplices is how many images splice patches in place; more are copied
// (apply), which costs one allocation instead of four per image.
const maxSplices = 16

// splice returns buf, whose bytes plan walked, patched as plan found
// without copying it: the parts of buf between the patched length prefixes
// and pinned fields, which are spliced in. It takes over the caller's
// reference to buf; the parts share it, and gRPC frees it once it has sent
// them all.
func (p *patcher) splice(buf mem.Buffer) mem.BufferSlice {
	b := buf.ReadOnlyData()
	out := make(mem.BufferSlice, 0, 4*len(p.spans)+1)
	rest, consumed := buf, 0
	var part, prefix mem.Buffer
	for _, sp := range p.spans {
		tagEnd := sp.tagStart + tagLen(b[sp.tagStart:])
		part, rest = mem.SplitUnsafe(rest, tagEnd-consumed)
		out = append(out, part)
		prefix, rest = mem.SplitUnsafe(rest, sp.valStart-tagEnd)
		prefix.Free() // the old length prefix
		out = append(out, mem.SliceBuffer(protowire.AppendVarint(nil, length(sp.valEnd-sp.valStart+len(pinnedTrue)))))
		part, rest = mem.SplitUnsafe(rest, sp.valEnd-sp.valStart)
		out = append(out, part, mem.SliceBuffer(pinnedTrue))
		consumed = sp.valEnd
	}
	return append(out, rest)
}

// maxHeader is the longest tag and length prefix: five bytes of tag and
// ten of varint.
const maxHeader = 15

// view returns the bytes [off, off+n) of the message in p.pieces, in
// place when one buffer holds them all, else copied into *scratch. cur is
// the buffer the previous view started in: views go forward.
func (p *patcher) view(cur *int, off, n int, scratch *[]byte) []byte {
	if n == 0 {
		return nil
	}
	i := *cur
	for p.starts[i]+len(p.pieces[i]) <= off {
		i++
	}
	*cur = i
	o := off - p.starts[i]
	if o+n <= len(p.pieces[i]) {
		return p.pieces[i][o : o+n]
	}
	out := (*scratch)[:0]
	for n > 0 {
		d := p.pieces[i][o:]
		if len(d) > n {
			d = d[:n]
		}
		out = append(out, d...)
		n -= len(d)
		i, o = i+1, 0
	}
	*scratch = out
	return out
}

// planPieces is plan for a ListImagesResponse or StreamImagesResponse
// received in several buffers (one per HTTP/2 data frame), walked where
// they are: only an image or a field header that crosses two buffers is
// copied, into scratch space. It returns false when the message has
// anything but length-delimited fields at the top (no encoder writes
// that), or does not decode: then the caller joins the buffers and calls
// plan, which says what is wrong. onPin may have been called by then.
func (p *patcher) planPieces(bufs mem.BufferSlice, m *pin.Matcher, onPin func(*wireImage)) bool {
	p.spans = p.spans[:0]
	p.pieces, p.starts = p.pieces[:0], p.starts[:0]
	size := 0
	for _, b := range bufs {
		d := b.ReadOnlyData()
		p.pieces = append(p.pieces, d)
		p.starts = append(p.starts, size)
		size += len(d)
	}
	w := &p.img
	defer func() {
		w.release()
		clear(p.pieces)
	}()
	cur := 0
	for off := 0; off < size; {
		h := p.view(&cur, off, min(maxHeader, size-off), &p.hdr)
		num, typ, n := consumeTag(h)
		if n < 0 || typ != protowire.BytesType {
			return false
		}
		l, k := protowire.ConsumeVarint(h[n:])
		if k < 0 || l > length(size-off-n-k) {
			return false
		}
		sp := span{tagStart: off, tagEnd: off + n, valStart: off + n + k}
		sp.valEnd = sp.valStart + int(l) //nolint:gosec // G115: l is at most size
		off = sp.valEnd
		if num != respImageField {
			continue
		}
		w.reset()
		if err := w.add(p.view(&cur, sp.valStart, sp.valEnd-sp.valStart, &p.value)); err != nil {
			return false
		}
		if !w.pinned && m.IsPinnedImage(w) {
			p.spans = append(p.spans, sp)
			if onPin != nil {
				onPin(w)
			}
		}
	}
	return true
}

// splicePieces is splice for a message in several buffers, as planPieces
// found it: it takes over the caller's references to bufs.
func (p *patcher) splicePieces(bufs mem.BufferSlice) mem.BufferSlice {
	out := make(mem.BufferSlice, 0, len(bufs)+4*len(p.spans))
	next := 0
	var front mem.Buffer // what is left of bufs[next-1], if anything
	// move passes the next n bytes to out (keep) or frees them.
	move := func(n int, keep bool) {
		for n > 0 {
			if front == nil {
				front = bufs[next]
				next++
			}
			part := front
			if front.Len() > n {
				part, front = mem.SplitUnsafe(front, n)
			} else {
				front = nil
			}
			n -= part.Len()
			if keep {
				out = append(out, part)
			} else {
				part.Free()
			}
		}
	}
	consumed := 0
	for _, sp := range p.spans {
		move(sp.tagEnd-consumed, true)
		move(sp.valStart-sp.tagEnd, false) // the old length prefix
		out = append(out, mem.SliceBuffer(protowire.AppendVarint(nil, length(sp.valEnd-sp.valStart+len(pinnedTrue)))))
		move(sp.valEnd-sp.valStart, true)
		out = append(out, mem.SliceBuffer(pinnedTrue))
		consumed = sp.valEnd
	}
	if front != nil {
		out = append(out, front)
	}
	return append(out, bufs[next:]...)
}
