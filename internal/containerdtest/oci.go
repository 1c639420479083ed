package containerdtest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"
)

// Image is an image to import: one config and one layer, stored under every
// name in Names (so the runtime lists one image with several repo tags).
type Image struct {
	// Names are the full references the image is stored under, such as
	// "registry.k8s.io/pause:3.10.1".
	Names []string
	// Executable, when set, is written into the layer as /pause (mode
	// 0755), the image's entrypoint, so that a runtime can run the image
	// (a static binary: the layer holds nothing else). Import then unpacks
	// the image for the CRI snapshotter.
	Executable []byte
	// Path, when set, is where Executable goes (and the entrypoint), and
	// the layer holds nothing else: an image like deploy/Dockerfile's,
	// whose one file is /sandboxpin. "" is /pause beside a file naming
	// the image.
	Path string
}

// The media types of an OCI image (image-spec v1.1). Written out here to
// keep the helper free of extra modules.
const (
	mediaTypeIndex    = "application/vnd.oci.image.index.v1+json"
	mediaTypeManifest = "application/vnd.oci.image.manifest.v1+json"
	mediaTypeConfig   = "application/vnd.oci.image.config.v1+json"
	mediaTypeLayer    = "application/vnd.oci.image.layer.v1.tar+gzip"

	// annotationImageName is the name containerd's importer gives an image.
	annotationImageName = "io.containerd.image.name"
	// annotationRefName is the OCI tag annotation.
	annotationRefName = "org.opencontainers.image.ref.name"
)

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Platform    *platform         `json:"platform,omitempty"`
}

type platform struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
}

// blobs is a content store being filled: digest -> bytes, in insertion order.
type blobs struct {
	order []string
	data  map[string][]byte
}

func (b *blobs) add(mediaType string, p []byte) descriptor {
	sum := sha256.Sum256(p)
	d := "sha256:" + hex.EncodeToString(sum[:])
	if b.data == nil {
		b.data = map[string][]byte{}
	}
	if _, ok := b.data[d]; !ok {
		b.order = append(b.order, d)
		b.data[d] = p
	}
	return descriptor{MediaType: mediaType, Digest: d, Size: int64(len(p))}
}

func (b *blobs) addJSON(mediaType string, v any) (descriptor, error) {
	p, err := json.Marshal(v)
	if err != nil {
		return descriptor{}, err
	}
	return b.add(mediaType, p), nil
}

// epoch is the time stamp of every file: archives are reproducible, so an
// image's ID depends only on its names.
var epoch = time.Unix(0, 0).UTC()

// layer returns a gzip'd tar holding /sandboxpin.txt with content and, if
// exe is not nil, /pause (or only exe, at path, when path is set), and the
// digest of the uncompressed tar (the diff ID).
func layer(content string, exe []byte, path string) (gz []byte, diffID string, err error) {
	var raw bytes.Buffer
	tw := tar.NewWriter(&raw)
	type file struct {
		name string
		mode int64
		data []byte
	}
	files := []file{{"sandboxpin.txt", 0o644, []byte(content)}}
	switch {
	case path != "":
		files = []file{{strings.TrimPrefix(path, "/"), 0o755, exe}}
	case exe != nil:
		files = append(files, file{"pause", 0o755, exe})
	}
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data)), ModTime: epoch, Typeflag: tar.TypeReg}); err != nil {
			return nil, "", err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, "", err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(raw.Bytes())
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.ModTime = epoch
	if _, err := zw.Write(raw.Bytes()); err != nil {
		return nil, "", err
	}
	if err := zw.Close(); err != nil {
		return nil, "", err
	}
	return z.Bytes(), "sha256:" + hex.EncodeToString(sum[:]), nil
}

// imageConfig is the part of the OCI image config we fill in.
type imageConfig struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
	Config       struct {
		Entrypoint []string          `json:"Entrypoint"`
		Labels     map[string]string `json:"Labels"`
	} `json:"config"`
	RootFS struct {
		Type    string   `json:"type"`
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
}

// imageBlobs returns img's one layer (gzip'd) and its config.
func imageBlobs(img Image) (gz, config []byte, err error) {
	gz, diffID, err := layer(strings.Join(img.Names, "\n")+"\n", img.Executable, img.Path)
	if err != nil {
		return nil, nil, err
	}
	var cfg imageConfig
	cfg.Architecture, cfg.OS = runtime.GOARCH, "linux"
	cfg.Config.Entrypoint = []string{"/pause"}
	if img.Path != "" {
		cfg.Config.Entrypoint = []string{img.Path}
	}
	cfg.Config.Labels = map[string]string{"io.sandboxpin.test.image": img.Names[0]}
	cfg.RootFS.Type = "layers"
	cfg.RootFS.DiffIDs = []string{diffID}
	config, err = json.Marshal(cfg)
	return gz, config, err
}

// WriteDockerArchive writes a `docker save` archive (manifest.json, one
// config and one layer per image) holding images to path, for `docker
// load`: Docker Engine 20.10 loads no OCI layout (it reads manifest.json
// only; image/tarexport/load.go at v20.10.24). The images are those
// WriteArchive writes, with the same IDs, which it returns in order.
func WriteDockerArchive(path string, images []Image) ([]string, error) {
	type entry struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	var (
		entries []entry
		files   []tarFile
		ids     []string
	)
	for i, img := range images {
		if len(img.Names) == 0 {
			return nil, fmt.Errorf("containerdtest: image %d has no name", i)
		}
		gz, cfg, err := imageBlobs(img)
		if err != nil {
			return nil, err
		}
		cfgSum, layerSum := sha256.Sum256(cfg), sha256.Sum256(gz)
		cfgName := hex.EncodeToString(cfgSum[:]) + ".json"
		layerName := hex.EncodeToString(layerSum[:]) + "/layer.tar"
		ids = append(ids, "sha256:"+hex.EncodeToString(cfgSum[:]))
		entries = append(entries, entry{Config: cfgName, RepoTags: img.Names, Layers: []string{layerName}})
		files = append(files, tarFile{cfgName, cfg}, tarFile{layerName, gz})
	}
	manifest, err := json.Marshal(entries)
	if err != nil {
		return nil, err
	}
	files = append(files, tarFile{"manifest.json", manifest})
	data, err := writeTar(files)
	if err != nil {
		return nil, err
	}
	return ids, os.WriteFile(path, data, 0o600)
}

// tarFile is a file of an archive being written.
type tarFile struct {
	name string
	data []byte
}

// writeTar returns a tar of files, each preceded by the directories its name
// needs that came before in no other name, every time stamp at epoch.
func writeTar(files []tarFile) ([]byte, error) {
	var out bytes.Buffer
	tw := tar.NewWriter(&out)
	dirs := map[string]bool{}
	for _, f := range files {
		for i := 0; i < len(f.name); i++ {
			if dir := f.name[:i+1]; f.name[i] == '/' && !dirs[dir] {
				dirs[dir] = true
				if err := tw.WriteHeader(&tar.Header{Name: dir, Mode: 0o755, ModTime: epoch, Typeflag: tar.TypeDir}); err != nil {
					return nil, err
				}
			}
		}
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.data)), ModTime: epoch, Typeflag: tar.TypeReg}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// WriteArchive writes an OCI image layout tar holding images to path. Each
// image gets its own layer and config (its content names the image), so
// distinct images have distinct IDs; the archive is reproducible. It returns
// the image ID (config digest) of each image, in order.
func WriteArchive(path string, images []Image) ([]string, error) {
	var store blobs
	var manifests []descriptor
	ids := make([]string, 0, len(images))
	for i, img := range images {
		if len(img.Names) == 0 {
			return nil, fmt.Errorf("containerdtest: image %d has no name", i)
		}
		gz, cfg, err := imageBlobs(img)
		if err != nil {
			return nil, err
		}
		layerDesc := store.add(mediaTypeLayer, gz)
		cfgDesc := store.add(mediaTypeConfig, cfg)
		ids = append(ids, cfgDesc.Digest)
		man := map[string]any{
			"schemaVersion": 2,
			"mediaType":     mediaTypeManifest,
			"config":        cfgDesc,
			"layers":        []descriptor{layerDesc},
		}
		manDesc, err := store.addJSON(mediaTypeManifest, man)
		if err != nil {
			return nil, err
		}
		for _, name := range img.Names {
			d := manDesc
			d.Platform = &platform{Architecture: runtime.GOARCH, OS: "linux"}
			d.Annotations = map[string]string{annotationImageName: name}
			if i := strings.LastIndexByte(name, ':'); i > strings.LastIndexByte(name, '/') {
				d.Annotations[annotationRefName] = name[i+1:]
			}
			manifests = append(manifests, d)
		}
	}
	index, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     mediaTypeIndex,
		"manifests":     manifests,
	})
	if err != nil {
		return nil, err
	}

	files := []tarFile{{"oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)}, {"index.json", index}}
	for _, d := range store.order {
		files = append(files, tarFile{"blobs/sha256/" + strings.TrimPrefix(d, "sha256:"), store.data[d]})
	}
	data, err := writeTar(files)
	if err != nil {
		return nil, err
	}
	return ids, os.WriteFile(path, data, 0o600)
}

// ManifestDigest returns the digest of img's manifest as WriteArchive writes
// it (the archive is reproducible), for a reference such as
// "registry.k8s.io/pause:3.10.1@sha256:…" that names the image a runtime
// will store.
func ManifestDigest(img Image) (string, error) {
	f, err := os.CreateTemp("", "sbp-manifest-*.tar")
	if err != nil {
		return "", err
	}
	name := f.Name()
	_ = f.Close()
	defer os.Remove(name)
	if _, err := WriteArchive(name, []Image{img}); err != nil {
		return "", err
	}
	data, err := os.ReadFile(name)
	if err != nil {
		return "", err
	}
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if err != nil {
			return "", fmt.Errorf("containerdtest: no index.json in the archive: %w", err)
		}
		if h.Name != "index.json" {
			continue
		}
		var index struct {
			Manifests []descriptor `json:"manifests"`
		}
		if err := json.NewDecoder(tr).Decode(&index); err != nil {
			return "", err
		}
		if len(index.Manifests) == 0 {
			return "", errors.New("containerdtest: empty index")
		}
		return index.Manifests[0].Digest, nil
	}
}
