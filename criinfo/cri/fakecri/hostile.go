package fakecri

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Hostile answers. The sizes the tests use sit on both sides of the limits
// that matter: gRPC's default receive limit (4 MiB), the 16 MiB that
// kubelet, crictl, criinfo/cri and the shim accept, and criinfo's
// MaxInputSize (also 16 MiB) and MaxDepth (64).

// DeepObject returns a JSON object nested depth levels deep:
// {"a":{"a":...{}...}}. It is 6 bytes a level.
func DeepObject(depth int) string {
	if depth <= 0 {
		return ""
	}
	var b strings.Builder
	b.Grow(6 * depth)
	for range depth - 1 {
		b.WriteString(`{"a":`)
	}
	b.WriteString("{}")
	for range depth - 1 {
		b.WriteByte('}')
	}
	return b.String()
}

// DeepArray returns a JSON array nested depth levels deep: [[[...]]].
func DeepArray(depth int) string {
	return strings.Repeat("[", depth) + strings.Repeat("]", depth)
}

// FillerInfo returns an Info map of keys "filler-0000000", "filler-0000001",
// ... whose values are valueLen bytes of 'x', as many as fit in total bytes
// of keys and values (the measure of criinfo.MaxInputSize). None of the keys
// means anything to a parser; add "config" for one that does.
func FillerInfo(total, valueLen int) map[string]string {
	value := strings.Repeat("x", valueLen)
	info := map[string]string{}
	for size := 0; ; {
		k := fmt.Sprintf("filler-%07d", len(info))
		if size+len(k)+len(value) > total {
			return info
		}
		info[k] = value
		size += len(k) + len(value)
	}
}

// Image returns the i-th image of an endless, deterministic image store:
// registry.example.com/hostile/image-NNNNNNN:1.0 with a digest and an ID,
// about 230 bytes on the wire.
func Image(i int) *runtimeapi.Image {
	digest := fmt.Sprintf("sha256:%064x", i)
	name := fmt.Sprintf("registry.example.com/hostile/image-%07d", i)
	return &runtimeapi.Image{
		Id:          digest,
		RepoTags:    []string{name + ":1.0"},
		RepoDigests: []string{name + "@" + digest},
	}
}

// ListSize returns the size in bytes of a ListImagesResponse with images, as
// the gRPC message that carries it (without gRPC's 5-byte prefix).
func ListSize(images []*runtimeapi.Image) int {
	return proto.Size(&runtimeapi.ListImagesResponse{Images: images})
}

// ImagesOfSize returns images (see [Image]) whose ListImagesResponse is
// exactly size bytes: ImagesOfSize(4<<20) is a response at gRPC's default
// receive limit. The last image, when needed, pads the size: it has no ID
// and no name, only a Username of 'p's. It panics when size is 1.
func ImagesOfSize(size int) []*runtimeapi.Image {
	// A ListImagesResponse holds only the repeated images field, so its
	// size is the sum of one-image responses; every Image(i) below
	// 10,000,000 has the same size.
	per := ListSize([]*runtimeapi.Image{Image(0)})
	for n := size / per; n >= 0; n-- {
		pad, ok := padImage(size - n*per)
		if !ok {
			continue
		}
		images := make([]*runtimeapi.Image, 0, n+1)
		for i := range n {
			images = append(images, Image(i))
		}
		if pad != nil {
			images = append(images, pad)
		}
		return images
	}
	panic(fmt.Sprintf("fakecri: no images make %d bytes", size))
}

// padImage returns an image that takes exactly rest bytes in a
// ListImagesResponse, nil when rest is 0, and false when none does.
func padImage(rest int) (*runtimeapi.Image, bool) {
	if rest == 0 {
		return nil, true
	}
	// The image's field tags and lengths take at most 8 bytes below 2 MiB.
	for n := max(0, rest-8); n <= rest; n++ {
		img := &runtimeapi.Image{Username: strings.Repeat("p", n)}
		if ListSize([]*runtimeapi.Image{img}) == rest {
			return img, true
		}
	}
	return nil, false
}
