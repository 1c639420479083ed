package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/sandboxpin/sandboxpin/reference"
)

// maxImagesFile bounds the crictl JSON an offline audit reads: 10,000
// images with a dozen names each take about 10 MiB.
const maxImagesFile = 64 << 20

// crictlImage is one image as `crictl images -o json` prints it (cri-tools
// cmd/crictl/image.go, v1.37.0: the CRI Image message through protojson,
// so camelCase keys).
type crictlImage struct {
	ID          string   `json:"id"`
	RepoTags    []string `json:"repoTags"`
	RepoDigests []string `json:"repoDigests"`
	Pinned      bool     `json:"pinned"`
}

func (i *crictlImage) GetId() string            { return i.ID } //nolint:revive // the cri-api getter name
func (i *crictlImage) GetRepoTags() []string    { return i.RepoTags }
func (i *crictlImage) GetRepoDigests() []string { return i.RepoDigests }
func (i *crictlImage) GetPinned() bool          { return i.Pinned }

// readImages reads the JSON `crictl images -o json` prints from path.
func readImages(path string) ([]*crictlImage, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--images: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxImagesFile+1))
	if err != nil {
		return nil, fmt.Errorf("--images %s: %w", path, err)
	}
	if len(b) > maxImagesFile {
		return nil, fmt.Errorf("--images %s: larger than %d MiB", path, maxImagesFile>>20)
	}
	var list struct {
		Images *[]*crictlImage `json:"images"`
	}
	if err := json.Unmarshal(b, &list); err != nil {
		if se := (*json.SyntaxError)(nil); errors.As(err, &se) {
			return nil, fmt.Errorf("--images %s: offset %d: %w (want the JSON of `crictl images -o json`)", path, se.Offset, err)
		}
		return nil, fmt.Errorf("--images %s: %w (want the JSON of `crictl images -o json`)", path, err)
	}
	if list.Images == nil {
		return nil, fmt.Errorf("--images %s: no \"images\" key (want the JSON of `crictl images -o json`)", path)
	}
	return *list.Images, nil
}

// auditOffline audits from the images file and the root, without a socket.
func auditOffline(ctx context.Context, n *nodeFlags) nodeAudit {
	images, err := readImages(n.images)
	if err != nil {
		return nodeAudit{Err: fail(exitError, "%v", err)}
	}
	res, err := n.resolve(ctx, nil)
	if err != nil {
		return nodeAudit{Err: fail(exitError, "%v", err)}
	}
	if err := n.unknown(res); err != nil {
		return nodeAudit{Err: err}
	}
	return judged(res, images, findsByName(res.Runtime, res.SandboxImage, images))
}

// findsByName predicts, offline, the runtime's own lookup of its sandbox
// image by the configured name (what the live audit asks with ImageStatus):
// a stored tag equal to it, or for containerd and cri-dockerd, whose
// lookups complete a Docker Hub short name, to its full form without
// registry aliases (pause:3.10.1 finds docker.io/library/pause:3.10.1,
// k8s.gcr.io/pause never finds registry.k8s.io/pause: TestKubeletGC in
// internal/kubelettest). CRI-O looks the configured string up as written
// (TestCRIOLive).
func findsByName(runtime, name string, images []*crictlImage) bool {
	full := name
	if r, err := reference.Parse(name); err == nil && runtime != "cri-o" {
		full = r.String()
	}
	for _, img := range images {
		for _, t := range img.RepoTags {
			if t == name || t == full {
				return true
			}
			if runtime == "cri-dockerd" {
				// Docker lists Docker Hub images by their short names.
				if r, err := reference.Parse(t); err == nil && r.String() == full {
					return true
				}
			}
		}
	}
	return false
}
