package release

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Entrypoint is where the image holds the binary, and its entrypoint, as in
// deploy/Dockerfile; deploy/kubernetes/daemonset.yaml gives the arguments.
const Entrypoint = "/sandboxpin"

// epoch is the time of every file in the image and the archive.
var epoch = time.Unix(0, 0).UTC()

// Binary is the static sandboxpin executable for one platform.
type Binary struct {
	Arch string // GOARCH; the OS is linux
	Data []byte
}

// Image is the DaemonSet's image: an image index with one image per
// binary, each of one layer holding only the binary at [Entrypoint] (mode
// 0755, owned by 0:0, so any user can run it: the DaemonSet runs it as root
// with no capabilities, and as 65534 where the runtime's socket has a
// group), on an empty base, with no user set and the label
// org.opencontainers.image.version. The index is an OCI one; its images
// have go-containerregistry v0.5.1's Docker schema 2 media types, which
// containerd, CRI-O, Docker and skopeo all read.
func Image(version string, bins []Binary) (v1.ImageIndex, error) {
	var adds []mutate.IndexAddendum
	for _, b := range bins {
		img, err := binaryImage(version, b)
		if err != nil {
			return nil, fmt.Errorf("release: image for linux/%s: %w", b.Arch, err)
		}
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{
			Platform: &v1.Platform{OS: "linux", Architecture: b.Arch},
		}})
	}
	return mutate.AppendManifests(empty.Index, adds...), nil
}

// binaryImage is the image of one binary.
func binaryImage(version string, b Binary) (v1.Image, error) {
	var raw bytes.Buffer
	tw := tar.NewWriter(&raw)
	if err := tw.WriteHeader(&tar.Header{
		Name: strings.TrimPrefix(Entrypoint, "/"), Mode: 0o755, Size: int64(len(b.Data)),
		ModTime: epoch, Typeflag: tar.TypeReg, Format: tar.FormatUSTAR,
	}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(b.Data); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(raw.Bytes())), nil
	})
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", b.Arch
	cf.Config.Entrypoint = []string{Entrypoint}
	cf.Config.Labels = map[string]string{
		"org.opencontainers.image.source":  "https://github.com/sandboxpin/sandboxpin",
		"org.opencontainers.image.version": version,
	}
	return mutate.ConfigFile(img, cf)
}

// WriteArchive writes idx to w as an OCI image layout in a tar (what `ctr
// images import`, `skopeo copy oci-archive:FILE:TAG` and `podman load`
// read), under the name ref (such as "ghcr.io/sandboxpin/sandboxpin:v0.1.0":
// index.json's annotations io.containerd.image.name, and
// org.opencontainers.image.ref.name with the tag). The archive's entries are
// in a fixed order, dated at the Unix epoch.
func WriteArchive(w io.Writer, ref string, idx v1.ImageIndex) error {
	blobs := map[string][]byte{}
	desc, err := addIndexBlobs(blobs, idx)
	if err != nil {
		return err
	}
	tag := ref[strings.LastIndexByte(ref, ':')+1:]
	index, err := json.Marshal(v1.IndexManifest{
		SchemaVersion: 2,
		MediaType:     types.OCIImageIndex,
		Manifests: []v1.Descriptor{{MediaType: desc.MediaType, Digest: desc.Digest, Size: desc.Size, Annotations: map[string]string{
			"io.containerd.image.name":          ref,
			"org.opencontainers.image.ref.name": tag,
		}}},
	})
	if err != nil {
		return err
	}
	names := make([]string, 0, len(blobs))
	for name := range blobs {
		names = append(names, name)
	}
	sort.Strings(names)
	tw := tar.NewWriter(w)
	put := func(name string, mode int64, data []byte) error {
		typ := byte(tar.TypeReg)
		if strings.HasSuffix(name, "/") {
			typ = tar.TypeDir
		}
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: mode, Size: int64(len(data)), ModTime: epoch, Typeflag: typ, Format: tar.FormatUSTAR}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	for _, f := range []struct {
		name string
		data []byte
	}{{"oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)}, {"index.json", index}, {"blobs/", nil}, {"blobs/sha256/", nil}} {
		mode := int64(0o644)
		if f.data == nil {
			mode = 0o755
		}
		if err := put(f.name, mode, f.data); err != nil {
			return err
		}
	}
	for _, name := range names {
		if err := put("blobs/sha256/"+name, 0o644, blobs[name]); err != nil {
			return err
		}
	}
	return tw.Close()
}

// addIndexBlobs adds idx's manifest and every blob of its images to blobs
// (keyed by hex digest), and returns idx's descriptor.
func addIndexBlobs(blobs map[string][]byte, idx v1.ImageIndex) (v1.Descriptor, error) {
	var desc v1.Descriptor
	raw, err := idx.RawManifest()
	if err != nil {
		return desc, err
	}
	man, err := idx.IndexManifest()
	if err != nil {
		return desc, err
	}
	if desc.MediaType, err = idx.MediaType(); err != nil {
		return desc, err
	}
	if desc.Digest, err = idx.Digest(); err != nil {
		return desc, err
	}
	desc.Size = int64(len(raw))
	blobs[desc.Digest.Hex] = raw
	for _, m := range man.Manifests {
		img, err := idx.Image(m.Digest)
		if err != nil {
			return desc, err
		}
		if err := addImageBlobs(blobs, img); err != nil {
			return desc, err
		}
	}
	return desc, nil
}

// addImageBlobs adds img's manifest, config and layers to blobs.
func addImageBlobs(blobs map[string][]byte, img v1.Image) error {
	for _, part := range []func() (v1.Hash, []byte, error){
		func() (v1.Hash, []byte, error) { return hashed(img.Digest, img.RawManifest) },
		func() (v1.Hash, []byte, error) { return hashed(img.ConfigName, img.RawConfigFile) },
	} {
		h, b, err := part()
		if err != nil {
			return err
		}
		blobs[h.Hex] = b
	}
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	for _, l := range layers {
		h, err := l.Digest()
		if err != nil {
			return err
		}
		rc, err := l.Compressed()
		if err != nil {
			return err
		}
		b, err := io.ReadAll(rc)
		_ = rc.Close()
		if err != nil {
			return err
		}
		blobs[h.Hex] = b
	}
	return nil
}

// hashed calls digest and raw.
func hashed(digest func() (v1.Hash, error), raw func() ([]byte, error)) (v1.Hash, []byte, error) {
	h, err := digest()
	if err != nil {
		return v1.Hash{}, nil, err
	}
	b, err := raw()
	return h, b, err
}
