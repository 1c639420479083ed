package registrytest

import (
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/sandboxpin/sandboxpin/internal/containerdtest"
	"github.com/sandboxpin/sandboxpin/reference"
)

// Registry is a running in-memory registry.
type Registry struct {
	// Addr is its host:port on 127.0.0.1, plain HTTP.
	Addr string
}

// Start serves a registry on a loopback port until the test ends.
func Start(t testing.TB) *Registry {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	return &Registry{Addr: strings.TrimPrefix(srv.URL, "http://")}
}

// Path returns the repository and tag under which r serves ref to a runtime
// that uses r as the mirror of ref's registry: ref's path and tag, without
// the domain. For example, Path("pause:3.10.1") is "library/pause:3.10.1".
func Path(ref string) (string, error) {
	p, err := reference.Parse(ref)
	if err != nil {
		return "", err
	}
	return p.Path() + ":" + p.Tag(), nil
}

// Push stores img in r under ref's path and tag (see [Path]), and returns
// the digest of the manifest pushed: the repo digest a runtime that pulls it
// reports.
func (r *Registry) Push(t testing.TB, ref string, img containerdtest.Image) string {
	t.Helper()
	path, err := Path(ref)
	if err != nil {
		t.Fatalf("registrytest: %v", err)
	}
	dir := t.TempDir()
	if _, err := containerdtest.WriteLayout(dir, []containerdtest.Image{img}); err != nil {
		t.Fatalf("registrytest: %v", err)
	}
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatalf("registrytest: %v", err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatalf("registrytest: %v", err)
	}
	// WriteLayout lists the one manifest once per name of img.
	d := im.Manifests[0].Digest
	v1img, err := idx.Image(d)
	if err != nil {
		t.Fatalf("registrytest: %v", err)
	}
	tag, err := name.NewTag(r.Addr+"/"+path, name.Insecure)
	if err != nil {
		t.Fatalf("registrytest: %v", err)
	}
	if err := remote.Write(tag, v1img); err != nil {
		t.Fatalf("registrytest: push %s: %v", tag, err)
	}
	return d.String()
}
