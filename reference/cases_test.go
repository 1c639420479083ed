package reference

import "strings"

const (
	hex64  = "7cc4b5aefd1d0cadf8d97d4350462ba51c694ebca145b08d7d41b41acc8db5aa"
	hex96  = hex64 + "0123456789abcdef0123456789abcdef"
	hex128 = hex64 + hex64
)

// goodRefs are inputs that parse, with their canonical forms under the
// default aliases. Tests, fuzz seeds and benchmarks share them.
var goodRefs = []struct {
	name string
	in   string // reference as a user or a runtime writes it
	want string // canonical String()
}{
	{name: "familiar", in: "busybox", want: "docker.io/library/busybox:latest"},
	{name: "familiar tag", in: "pause:3.10", want: "docker.io/library/pause:3.10"},
	{name: "library", in: "library/busybox:latest", want: "docker.io/library/busybox:latest"},
	{name: "docker.io short", in: "docker.io/busybox", want: "docker.io/library/busybox:latest"},
	{name: "docker.io full", in: "docker.io/library/busybox", want: "docker.io/library/busybox:latest"},
	{name: "index.docker.io", in: "index.docker.io/library/busybox", want: "docker.io/library/busybox:latest"},
	{name: "registry-1", in: "registry-1.docker.io/library/busybox:latest", want: "docker.io/library/busybox:latest"},
	{name: "docker hub any case", in: "Docker.IO/busybox:1", want: "docker.io/library/busybox:1"},
	{name: "user repo", in: "dmcgowan/myapp:v1", want: "docker.io/dmcgowan/myapp:v1"},
	{name: "canonical", in: "registry.k8s.io/pause:3.10.1", want: "registry.k8s.io/pause:3.10.1"},
	{name: "k8s.gcr.io alias", in: "k8s.gcr.io/pause:3.9", want: "registry.k8s.io/pause:3.9"},
	{name: "google-containers alias", in: "gcr.io/google-containers/pause:3.9", want: "registry.k8s.io/pause:3.9"},
	{name: "google_containers alias", in: "gcr.io/google_containers/pause:3.9", want: "registry.k8s.io/pause:3.9"},
	{name: "alias is per component", in: "k8s.gcr.io.evil.com/pause:1", want: "k8s.gcr.io.evil.com/pause:1"},
	{name: "gcr.io other path", in: "gcr.io/google-containersx/pause:1", want: "gcr.io/google-containersx/pause:1"},
	{name: "domain case kept", in: "Registry.K8s.io/pause:3.9", want: "Registry.K8s.io/pause:3.9"},
	{name: "tag case kept", in: "registry.k8s.io/pause:RC1", want: "registry.k8s.io/pause:RC1"},
	{name: "digest", in: "registry.k8s.io/pause@sha256:" + hex64, want: "registry.k8s.io/pause@sha256:" + hex64},
	{name: "tag and digest", in: "registry.k8s.io/pause:3.9@sha256:" + hex64, want: "registry.k8s.io/pause:3.9@sha256:" + hex64},
	{name: "sha384", in: "busybox@sha384:" + hex96, want: "docker.io/library/busybox@sha384:" + hex96},
	{name: "sha512", in: "busybox@sha512:" + hex128, want: "docker.io/library/busybox@sha512:" + hex128},
	{name: "localhost port", in: "localhost:5000/foo/bar:1", want: "localhost:5000/foo/bar:1"},
	{name: "localhost", in: "localhost/foo", want: "localhost/foo:latest"},
	{name: "localhost alone is a repo", in: "localhost:5000", want: "docker.io/library/localhost:5000"},
	{name: "ipv6", in: "[::1]:5000/pause:3", want: "[::1]:5000/pause:3"},
	{name: "uppercase first component is a domain", in: "Foo/bar", want: "Foo/bar:latest"},
	{name: "separators", in: "ab/c.d_e__f---g:x_y.z-w", want: "docker.io/ab/c.d_e__f---g:x_y.z-w"},
	{name: "image ID shaped tag", in: "sha256:" + hex64, want: "docker.io/library/sha256:" + hex64},
	{name: "64 hex with tag", in: hex64 + ":1", want: "docker.io/library/" + hex64 + ":1"},
	{name: "invalid domain is a path", in: "a_b.example/x", want: "a_b.example/x:latest"},
	{name: "longest tag", in: "a:" + strings.Repeat("t", 128), want: "docker.io/library/a:" + strings.Repeat("t", 128)},
	{name: "longest path", in: "r.io/" + strings.Repeat("a", 255), want: "r.io/" + strings.Repeat("a", 255) + ":latest"},
}

// badRefs are inputs that must fail, with the sentinel and the offset.
var badRefs = []struct {
	name    string
	in      string // the input
	wantErr error  // sentinel, checked with errors.Is
	offset  int    // ParseError.Offset
}{
	{name: "empty", in: "", wantErr: ErrInvalidFormat, offset: 0},
	{name: "space", in: " ", wantErr: ErrInvalidFormat, offset: 0},
	{name: "inner space", in: "pause :3", wantErr: ErrInvalidFormat, offset: 5},
	{name: "double slash", in: "registry.k8s.io//pause", wantErr: ErrInvalidFormat, offset: 16},
	{name: "trailing slash", in: "registry.k8s.io/pause/", wantErr: ErrInvalidFormat, offset: 22},
	{name: "uppercase path", in: "registry.k8s.io/Pause:3", wantErr: ErrNameContainsUppercase, offset: 16},
	{name: "uppercase familiar", in: "Busybox", wantErr: ErrNameContainsUppercase, offset: 0},
	{name: "short digest", in: "pause@sha256:abc", wantErr: ErrInvalidDigest, offset: 6},
	{name: "uppercase digest", in: "pause@sha256:" + strings.ToUpper(hex64), wantErr: ErrInvalidDigest, offset: 6},
	{name: "unknown algorithm", in: "pause@md5:" + hex64, wantErr: ErrInvalidDigest, offset: 6},
	{name: "two at signs", in: "a@b@c", wantErr: ErrInvalidDigest, offset: 2},
	{name: "empty tag", in: "pause:", wantErr: ErrInvalidTag, offset: 6},
	{name: "tag starts with dot", in: "pause:.1", wantErr: ErrInvalidTag, offset: 6},
	{name: "tag too long", in: "a:" + strings.Repeat("t", 129), wantErr: ErrInvalidTag, offset: 130},
	{name: "nul byte", in: "pau\x00se", wantErr: ErrInvalidFormat, offset: 3},
	{name: "no name", in: ":3.10", wantErr: ErrInvalidFormat, offset: 0},
	{name: "only digest", in: "@sha256:" + hex64, wantErr: ErrInvalidFormat, offset: 0},
	{name: "image ID as name", in: hex64, wantErr: ErrInvalidFormat, offset: 0},
	{name: "path too long", in: "r.io/" + strings.Repeat("a", 256), wantErr: ErrNameTooLong, offset: 260},
	{name: "familiar too long with library", in: strings.Repeat("a", 250), wantErr: ErrNameTooLong, offset: 250},
	{name: "domain too long", in: strings.Repeat("a", 300) + ".io:5000/x", wantErr: ErrNameTooLong, offset: 255},
	{name: "megabyte", in: strings.Repeat("a", 1<<20), wantErr: ErrNameTooLong, offset: MaxInputLength},
	{name: "bad port", in: "host:50a0/x", wantErr: ErrInvalidFormat, offset: 7},
	{name: "empty port", in: "host:/x", wantErr: ErrInvalidFormat, offset: 5},
	{name: "domain dash", in: "-a.io/x", wantErr: ErrInvalidFormat, offset: 0},
	{name: "double dot", in: "a..io/x", wantErr: ErrInvalidFormat, offset: 2},
	{name: "triple underscore", in: "a___b", wantErr: ErrInvalidFormat, offset: 3},
	{name: "separator at end", in: "a-", wantErr: ErrInvalidFormat, offset: 2},
	{name: "bad ipv6", in: "[::g]/x", wantErr: ErrInvalidFormat, offset: 3},
}
