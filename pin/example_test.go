package pin_test

import (
	"fmt"

	"github.com/sandboxpin/sandboxpin/pin"
)

// criImage stands in for *runtimeapi.Image, which satisfies pin.Image.
type criImage struct {
	ID          string
	RepoTags    []string
	RepoDigests []string
	Pinned      bool
}

func (i *criImage) GetId() string            { return i.ID } //nolint:revive // the cri-api getter name
func (i *criImage) GetRepoTags() []string    { return i.RepoTags }
func (i *criImage) GetRepoDigests() []string { return i.RepoDigests }

func Example() {
	// containerd 2.x configured with the old registry name, image stored
	// under the new one: containerd reports pinned=false.
	m, err := pin.Compile([]string{"k8s.gcr.io/pause:3.10.1"}, pin.WithSource("config.toml"))
	if err != nil {
		fmt.Println(err)
		return
	}
	img := &criImage{ID: "sha256:cd073f4c5f6a8e9dc6f3125ba00cf60819cae95c1ec84a1f146ee4a9cf9e803f", RepoTags: []string{"registry.k8s.io/pause:3.10.1"}}
	img.Pinned = img.Pinned || m.IsPinnedImage(img)
	fmt.Println(img.Pinned)
	// Output: true
}

func ExampleCompile() {
	_, err := pin.Compile([]string{"registry.k8s.io/pause:3.10", "*", "registry.k8s.io/*/pause"})
	fmt.Println(err)
	// Output:
	// pattern 1 "*": invalid pin pattern: "*" would pin every image; list the images instead
	// pattern 2 "registry.k8s.io/*/pause": invalid pin pattern: '*' may only end a pattern ("prefix*") or surround one ("*text*")
}

func ExampleMatcher_IsPinned() {
	m, err := pin.Compile([]string{"registry.k8s.io/pause:3.10", "quay.io/*", "sha256:cd073f4c5f6a8e9dc6f3125ba00cf60819cae95c1ec84a1f146ee4a9cf9e803f"})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, name := range []string{
		"registry.k8s.io/pause:3.10",
		"registry.k8s.io/pause:3.9",
		"quay.io/team/app:1",
		"evil.com/quay.io/team/app:1",
		"sha256:cd073f4c5f6a8e9dc6f3125ba00cf60819cae95c1ec84a1f146ee4a9cf9e803f",
	} {
		fmt.Println(name, m.IsPinned(name))
	}
	// Output:
	// registry.k8s.io/pause:3.10 true
	// registry.k8s.io/pause:3.9 false
	// quay.io/team/app:1 true
	// evil.com/quay.io/team/app:1 false
	// sha256:cd073f4c5f6a8e9dc6f3125ba00cf60819cae95c1ec84a1f146ee4a9cf9e803f true
}

func ExampleMatcher_IsPinned_alias() {
	m, err := pin.Compile([]string{"registry.k8s.io/pause:3.10.1"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(m.IsPinned("k8s.gcr.io/pause:3.10.1"))
	fmt.Println(m.IsPinned("gcr.io/google-containers/pause:3.10.1"))
	fmt.Println(m.IsPinned("k8s.gcr.io.evil.com/pause:3.10.1"))
	// Output:
	// true
	// true
	// false
}

func ExampleMatcher_Explain() {
	m, err := pin.Compile([]string{"k8s.gcr.io/pause:3.10.1"}, pin.WithSource("/etc/containerd/config.toml:12"))
	if err != nil {
		fmt.Println(err)
		return
	}
	got, ok := m.Explain(&criImage{RepoTags: []string{"registry.k8s.io/pause:3.10.1"}})
	fmt.Println(ok, got.Pattern, got.Source, got.Name, got.Kind)
	// Output: true k8s.gcr.io/pause:3.10.1 /etc/containerd/config.toml:12 registry.k8s.io/pause:3.10.1 tag
}

func ExampleWithMode() {
	// What CRI-O does with pinned_images = ["registry.k8s.io/*"]: an
	// unanchored, case-insensitive match.
	crio, err := pin.Compile([]string{"registry.k8s.io/*"}, pin.WithMode(pin.ModeCRIOCompat))
	if err != nil {
		fmt.Println(err)
		return
	}
	strict, err := pin.Compile([]string{"registry.k8s.io/*"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(crio.IsPinned("evil.com/registry.k8s.io/x:1"), strict.IsPinned("evil.com/registry.k8s.io/x:1"))
	// Output: true false
}

func ExampleSet() {
	var current pin.Set // the zero Set pins nothing
	fmt.Println(current.Load().IsPinned("registry.k8s.io/pause:3.10"))
	m, err := pin.Compile([]string{"registry.k8s.io/pause:3.10"})
	if err != nil {
		fmt.Println(err)
		return
	}
	current.Store(m) // on a config reload
	fmt.Println(current.Load().IsPinned("registry.k8s.io/pause:3.10"))
	// Output:
	// false
	// true
}

// A name is judged alone: a digest spelling of an image pinned by tag is
// not pinned by itself, but the image, with its tag beside the digest, is.
func ExampleMatcher_IsPinned_digest() {
	m, err := pin.Compile([]string{"registry.k8s.io/pause:3.10"})
	if err != nil {
		fmt.Println(err)
		return
	}
	const byDigest = "registry.k8s.io/pause@sha256:ee6521f290b2168b6e0935a181d4cff9be1ac3f505666ef0e3c98fae8199917a"
	fmt.Println(m.IsPinned(byDigest))
	fmt.Println(m.IsPinnedImage(&criImage{RepoTags: []string{"registry.k8s.io/pause:3.10"}, RepoDigests: []string{byDigest}}))
	// Output:
	// false
	// true
}

// dockerImage stands in for a Docker image summary adapted by a
// cri-dockerd shim: it has labels, which the CRI Image does not.
type dockerImage struct {
	criImage
	Labels map[string]string
}

func (i *dockerImage) GetLabels() map[string]string { return i.Labels }

// What cri-dockerd 0.4.7 and later pin with --pinned-images,
// --pinned-image-labels and its sandbox image: raw strings against the
// familiar names Docker lists, so a fully qualified Docker Hub name pins
// nothing, and CRIDockerdNeverMatches says so.
func ExampleCRIDockerdNeverMatches() {
	patterns := []string{"nginx", "docker.io/library/redis:7.4", "registry.k8s.io/coredns/*"}
	m, err := pin.Compile(patterns, pin.WithMode(pin.ModeCRIDockerdCompat),
		pin.WithImageLabels("tier=platform"), pin.WithSandboxImage("registry.k8s.io/pause:3.10"))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, img := range []*dockerImage{
		{criImage: criImage{RepoTags: []string{"nginx:1.27"}}},
		{criImage: criImage{RepoTags: []string{"redis:7.4"}}},
		{criImage: criImage{RepoTags: []string{"registry.k8s.io/coredns/coredns:v1.12.0"}}},
		{criImage: criImage{RepoTags: []string{"registry.k8s.io/pause:3.10"}}},
		{criImage: criImage{RepoTags: []string{"busybox:1.37"}}, Labels: map[string]string{"tier": "platform"}},
	} {
		if got, ok := m.Explain(img); ok {
			fmt.Println(img.RepoTags[0], "pinned:", got.Kind, got.Name)
		} else {
			fmt.Println(img.RepoTags[0], "not pinned")
		}
	}
	for _, p := range patterns {
		if reason, never := pin.CRIDockerdNeverMatches(p); never {
			fmt.Printf("%s: %s\n", p, reason)
		}
	}
	// Output:
	// nginx:1.27 pinned: repository nginx:1.27
	// redis:7.4 not pinned
	// registry.k8s.io/coredns/coredns:v1.12.0 pinned: prefix registry.k8s.io/coredns/coredns:v1.12.0
	// registry.k8s.io/pause:3.10 pinned: sandbox registry.k8s.io/pause:3.10
	// busybox:1.37 pinned: label tier=platform
	// docker.io/library/redis:7.4: Docker lists Docker Hub images without "docker.io/" (as "redis:7.4"), and cri-dockerd compares raw strings
}
