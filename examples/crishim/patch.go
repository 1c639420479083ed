package main

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
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		switch {
		case typ == protowire.BytesType && (num == imageIDField || num == imageTagsField || num == imageDigestsField):
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return protowire.ParseError(n)
			}
			s := bytesString(v)
			switch num {
			case imageIDField:
				w.id = s
			case imageTagsField:
				w.tags = append(w.tags, s)
			default:
				w.digests = append(w.digests, s)
			}
			b = b[n:]
		case typ == protowire.VarintType && num == imagePinnedField:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return protowire.ParseError(n)
			}
			w.pinned = protowire.DecodeBool(v)
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
	tagStart, valStart, valEnd int
}

// patcher sets pinned in encoded responses. It holds scratch space reused
// from one response to the next; get one from patchers.
type patcher struct {
	img   wireImage
	spans []span
}

var patchers = sync.Pool{New: func() any { return new(patcher) }}

// patchPinned walks the encoded response b, whose images are field 1
// (repeated when single is false: ListImagesResponse, StreamImagesResponse;
// one image when single is true: ImageStatusResponse, whose occurrences of
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
		num, typ, n := protowire.ConsumeTag(b[off:])
		if n < 0 {
			return 0, fmt.Errorf("%w: field tag at offset %d: %w", errMalformed, off, protowire.ParseError(n))
		}
		tagStart := off
		off += n
		if num != respImageField || typ != protowire.BytesType {
			n = protowire.ConsumeFieldValue(num, typ, b[off:])
			if n < 0 {
				return 0, fmt.Errorf("%w: field %d at offset %d: %w", errMalformed, num, tagStart, protowire.ParseError(n))
			}
			off += n
			continue
		}
		v, n := protowire.ConsumeBytes(b[off:])
		if n < 0 {
			return 0, fmt.Errorf("%w: image at offset %d: %w", errMalformed, tagStart, protowire.ParseError(n))
		}
		sp := span{tagStart: tagStart, valStart: off + n - len(v), valEnd: off + n}
		off += n
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
	if len(p.spans) == 0 {
		return len(b), nil
	}
	size = len(b)
	for _, sp := range p.spans {
		oldLen := sp.valEnd - sp.valStart
		size += protowire.SizeVarint(length(oldLen+len(pinnedTrue))) - protowire.SizeVarint(length(oldLen)) + len(pinnedTrue)
		// A length prefix longer than minimal (legal, never written by
		// protobuf encoders) is rewritten minimal: account for it.
		size -= sp.valStart - sp.tagStart - tagLen(b[sp.tagStart:]) - protowire.SizeVarint(length(oldLen))
	}
	return size, nil
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
