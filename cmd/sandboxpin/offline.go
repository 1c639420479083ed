package main

import (
	"context"
	"fmt"
	"os"

	"github.com/sandboxpin/sandboxpin/audit"
)

// readImages reads the JSON `crictl images -o json` prints from path, with
// audit.ReadImages.
func readImages(path string) ([]*audit.ListedImage, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--images: %w", err)
	}
	defer f.Close()
	images, err := audit.ReadImages(f)
	if err != nil {
		return nil, fmt.Errorf("--images %s: %w", path, err)
	}
	return images, nil
}

// auditOffline audits from the images file and the root, without a socket:
// the runtime's own lookup of the configured name is not asked, and package
// audit predicts it.
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
	return judged(res, audit.ListedObservation{Images: images, Lookup: audit.LookupNotAsked})
}
