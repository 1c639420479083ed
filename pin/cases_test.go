package pin

const (
	hexA = "7cc4b5aefd1d0cadf8d97d4350462ba51c694ebca145b08d7d41b41acc8db5aa"
	hexB = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
)

// image is a CRI image without cri-api, for tests and benchmarks.
type image struct {
	id      string
	tags    []string
	digests []string
}

func (i image) GetId() string            { return i.id } //nolint:revive // the cri-api getter name
func (i image) GetRepoTags() []string    { return i.tags }
func (i image) GetRepoDigests() []string { return i.digests }

// strictCases are the rows of the ModeStrict semantics: one pattern list, one
// name, and whether the name is pinned. Tests, fuzz seeds and benchmarks
// share them.
var strictCases = []struct {
	name     string
	patterns []string // compiled with the default aliases
	image    string   // a name given to IsPinned
	want     bool
}{
	{name: "exact canonical", patterns: []string{"registry.k8s.io/pause:3.10.1"}, image: "registry.k8s.io/pause:3.10.1", want: true},
	{name: "other tag", patterns: []string{"registry.k8s.io/pause:3.10.1"}, image: "registry.k8s.io/pause:3.10", want: false},
	{name: "alias configured, canonical stored", patterns: []string{"k8s.gcr.io/pause:3.10.1"}, image: "registry.k8s.io/pause:3.10.1", want: true},
	{name: "canonical configured, alias stored", patterns: []string{"registry.k8s.io/pause:3.10.1"}, image: "k8s.gcr.io/pause:3.10.1", want: true},
	{name: "gcr alias", patterns: []string{"gcr.io/google-containers/pause:3.9"}, image: "registry.k8s.io/pause:3.9", want: true},
	{name: "lookalike domain", patterns: []string{"k8s.gcr.io/pause:3.9"}, image: "k8s.gcr.io.evil.com/pause:3.9", want: false},
	{name: "familiar pattern", patterns: []string{"pause:3.10"}, image: "docker.io/library/pause:3.10", want: true},
	{name: "docker familiar name", patterns: []string{"docker.io/library/nginx:1.27"}, image: "nginx:1.27", want: true},
	{name: "docker index name", patterns: []string{"nginx:1.27"}, image: "index.docker.io/library/nginx:1.27", want: true},
	{name: "tagless is latest", patterns: []string{"busybox"}, image: "docker.io/library/busybox:latest", want: true},
	{name: "tagless is not any tag", patterns: []string{"busybox"}, image: "docker.io/library/busybox:1.36", want: false},
	{name: "tag is case-sensitive", patterns: []string{"registry.k8s.io/pause:RC"}, image: "registry.k8s.io/pause:rc", want: false},
	{name: "domain case folds", patterns: []string{"registry.k8s.io/pause:3.9"}, image: "Registry.K8s.io/pause:3.9", want: true},
	{name: "digest ref pins repo digest", patterns: []string{"registry.k8s.io/pause@sha256:" + hexA}, image: "registry.k8s.io/pause@sha256:" + hexA, want: true},
	{name: "digest ref alias", patterns: []string{"k8s.gcr.io/pause@sha256:" + hexA}, image: "registry.k8s.io/pause@sha256:" + hexA, want: true},
	{name: "digest ref other repo", patterns: []string{"registry.k8s.io/pause@sha256:" + hexA}, image: "quay.io/pause@sha256:" + hexA, want: false},
	{name: "tag+digest ref is its digest", patterns: []string{"registry.k8s.io/pause:3.9@sha256:" + hexA}, image: "registry.k8s.io/pause@sha256:" + hexA, want: true},
	{name: "digest ref does not pin the tag", patterns: []string{"registry.k8s.io/pause@sha256:" + hexA}, image: "registry.k8s.io/pause:3.9", want: false},
	{name: "image ID pins ID", patterns: []string{"sha256:" + hexA}, image: "sha256:" + hexA, want: true},
	{name: "bare hex pins ID", patterns: []string{hexA}, image: "sha256:" + hexA, want: true},
	{name: "bare digest pins any repo digest", patterns: []string{"sha256:" + hexA}, image: "quay.io/x/y@sha256:" + hexA, want: true},
	{name: "ID is not a repo named sha256", patterns: []string{"docker.io/library/*"}, image: "sha256:" + hexA, want: false},
	{name: "glob", patterns: []string{"registry.k8s.io/*"}, image: "registry.k8s.io/pause:3.9", want: true},
	{name: "glob deeper", patterns: []string{"registry.k8s.io/*"}, image: "registry.k8s.io/sig/x@sha256:" + hexA, want: true},
	{name: "glob is anchored", patterns: []string{"registry.k8s.io/*"}, image: "evil.com/registry.k8s.io/x:1", want: false},
	{name: "glob alias pattern", patterns: []string{"k8s.gcr.io/*"}, image: "registry.k8s.io/pause:3.9", want: true},
	{name: "glob alias name", patterns: []string{"registry.k8s.io/*"}, image: "k8s.gcr.io/pause:3.9", want: true},
	{name: "glob over an alias source", patterns: []string{"gcr.io/*"}, image: "registry.k8s.io/pause:3.9", want: true},
	{name: "glob partial component", patterns: []string{"registry.k8s.io/pau*"}, image: "registry.k8s.io/pause:3.9", want: true},
	{name: "glob partial miss", patterns: []string{"registry.k8s.io/pau*"}, image: "registry.k8s.io/kube-proxy:1", want: false},
	{name: "glob familiar", patterns: []string{"nginx*"}, image: "nginx:1.27", want: true},
	{name: "glob domain partial", patterns: []string{"quay.io*"}, image: "quay.io/x/y:1", want: true},
	{name: "glob not on tag", patterns: []string{"registry.k8s.io/pause:3*"}, image: "registry.k8s.io/pause:3.9", want: false},
	{name: "glob rejects malformed names", patterns: []string{"registry.k8s.io/*"}, image: "registry.k8s.io/Pause:3.9", want: false},
	{name: "keyword", patterns: []string{"*pause*"}, image: "registry.k8s.io/pause:3.9", want: true},
	{name: "keyword case-insensitive", patterns: []string{"*PAUSE*"}, image: "registry.k8s.io/pause:3.9", want: true},
	{name: "keyword on canonical name", patterns: []string{"*registry.k8s*"}, image: "k8s.gcr.io/pause:3.9", want: true},
	{name: "keyword not on tag", patterns: []string{"*3.9*"}, image: "registry.k8s.io/pause:3.9", want: false},
	{name: "keyword docker", patterns: []string{"*library/ngi*"}, image: "nginx", want: true},
	{name: "empty pattern pins nothing", patterns: []string{""}, image: "registry.k8s.io/pause:3.9", want: false},
	{name: "no patterns", patterns: nil, image: "registry.k8s.io/pause:3.9", want: false},
	{name: "garbage name", patterns: []string{"registry.k8s.io/pause:3.9"}, image: "registry.k8s.io//pause:3.9", want: false},
	{name: "empty name", patterns: []string{"*a*"}, image: "", want: false},
}

// crioCases are CRI-O's pinned_images rules, as its code applies them.
var crioCases = []struct {
	name     string
	patterns []string // compiled in ModeCRIOCompat mode
	image    string   // the raw name
	want     bool
}{
	{name: "exact", patterns: []string{"registry.k8s.io/pause:3.10"}, image: "registry.k8s.io/pause:3.10", want: true},
	{name: "exact is case-insensitive", patterns: []string{"REGISTRY.k8s.io/PAUSE:3.10"}, image: "registry.k8s.io/pause:3.10", want: true},
	{name: "exact is raw: no aliases", patterns: []string{"k8s.gcr.io/pause:3.10"}, image: "registry.k8s.io/pause:3.10", want: false},
	{name: "exact is raw: no normalization", patterns: []string{"pause:3.10"}, image: "docker.io/library/pause:3.10", want: false},
	{name: "exact is whole", patterns: []string{"registry.k8s.io/pause"}, image: "registry.k8s.io/pause:3.10", want: false},
	{name: "glob is unanchored", patterns: []string{"registry.k8s.io/*"}, image: "evil.com/registry.k8s.io/x:1", want: true},
	{name: "glob is case-insensitive", patterns: []string{"Registry.K8s.io/*"}, image: "registry.k8s.io/pause:3.10", want: true},
	{name: "glob matches tags", patterns: []string{"registry.k8s.io/pause:3*"}, image: "registry.k8s.io/pause:3.10", want: true},
	{name: "keyword", patterns: []string{"*Fedora*"}, image: "quay.io/crio/fedora34:latest", want: true},
	{name: "keyword miss", patterns: []string{"*fedora*"}, image: "quay.io/crio/centos:latest", want: false},
	{name: "double star pins everything", patterns: []string{"**"}, image: "anything", want: true},
	{name: "leading star is literal", patterns: []string{"*pause"}, image: "registry.k8s.io/pause", want: false},
	{name: "leading star literal hit", patterns: []string{"*pause"}, image: "*PAUSE", want: true},
	{name: "inner star is literal", patterns: []string{"registry.k8s.io/*/pause"}, image: "registry.k8s.io/x/pause", want: false},
	{name: "inner star in glob is literal", patterns: []string{"a*b*"}, image: "xxA*Bxx", want: true},
	{name: "empty matches nothing", patterns: []string{""}, image: "registry.k8s.io/pause:3.10", want: false},
	{name: "unicode folding", patterns: []string{"*k8s*"}, image: "registry.\u212a8s.io/x", want: true},
}

// labeledImage is an image with Docker labels, which implements Labeled.
type labeledImage struct {
	image
	labels map[string]string
}

func (i labeledImage) GetLabels() map[string]string { return i.labels }

// criDockerdCases are cri-dockerd's --pinned-images and
// --pinned-image-labels rules, as core/pinned.go applies them (the first
// rows are its own TestPinnedImageMatcher's), on images as Docker lists
// them.
var criDockerdCases = []struct {
	name      string
	patterns  []string     // --pinned-images entries, compiled in ModeCRIDockerdCompat mode
	selectors []string     // --pinned-image-labels entries
	sandbox   string       // WithSandboxImage
	img       labeledImage // the image as Docker lists it
	want      bool         // IsPinnedImage
	kind      Kind         // Explain's kind when want
}{
	{name: "no selectors pins nothing", img: dockerImage([]string{"nginx:1.27"}, nil, nil), want: false},
	{name: "exact reference", patterns: []string{"nginx:1.27"}, img: dockerImage([]string{"nginx:1.27"}, nil, nil), want: true, kind: KindExact},
	{name: "exact reference is not another tag", patterns: []string{"nginx:1.27"}, img: dockerImage([]string{"nginx:1.28"}, nil, nil), want: false},
	{name: "bare repository pins every tag", patterns: []string{"nginx"}, img: dockerImage([]string{"nginx:1.28"}, nil, nil), want: true, kind: KindRepository},
	{name: "bare repository pins its digests", patterns: []string{"nginx"}, img: dockerImage(nil, []string{"nginx@sha256:" + hexA}, nil), want: true, kind: KindRepository},
	{name: "bare repository is whole", patterns: []string{"nginx"}, img: dockerImage([]string{"nginx-proxy:1"}, nil, nil), want: false},
	{name: "bare repository other", patterns: []string{"nginx"}, img: dockerImage([]string{"redis:7.4"}, nil, nil), want: false},
	{name: "registry port is not a tag", patterns: []string{"localhost:5000/library/nginx"}, img: dockerImage([]string{"localhost:5000/library/nginx:1.27"}, nil, nil), want: true, kind: KindRepository},
	{name: "port without path is exact", patterns: []string{"localhost:5000"}, img: dockerImage([]string{"localhost:5000"}, nil, nil), want: true, kind: KindExact},
	{name: "prefix", patterns: []string{"registry.k8s.io/*"}, img: dockerImage([]string{"registry.k8s.io/pause:3.10"}, nil, nil), want: true, kind: KindPrefix},
	{name: "prefix is raw and anchored", patterns: []string{"registry.k8s.io/*"}, img: dockerImage([]string{"evil.com/registry.k8s.io/x:1"}, nil, nil), want: false},
	{name: "prefix reaches the tag", patterns: []string{"registry.k8s.io/pause:3.1*"}, img: dockerImage([]string{"registry.k8s.io/pause:3.10"}, nil, nil), want: true, kind: KindPrefix},
	{name: "prefix is case-sensitive", patterns: []string{"Registry.k8s.io/*"}, img: dockerImage([]string{"registry.k8s.io/pause:3.10"}, nil, nil), want: false},
	{name: "prefix matches digests", patterns: []string{"quay.io/team/*"}, img: dockerImage(nil, []string{"quay.io/team/app@sha256:" + hexA}, nil), want: true, kind: KindPrefix},
	{name: "star alone pins every named image", patterns: []string{"*"}, img: dockerImage([]string{"anything:1"}, nil, nil), want: true, kind: KindPrefix},
	{name: "star alone needs a name", patterns: []string{"*"}, img: dockerImage(nil, nil, nil), want: false},
	{name: "only one trailing star is removed", patterns: []string{"a**"}, img: dockerImage([]string{"ab:1"}, nil, nil), want: false},
	{name: "inner star is literal", patterns: []string{"a*b*"}, img: dockerImage([]string{"a*bc:1"}, nil, nil), want: true, kind: KindPrefix},
	{name: "leading star is literal", patterns: []string{"*nginx"}, img: dockerImage([]string{"nginx:1"}, nil, nil), want: false},
	{name: "repo digest", patterns: []string{"nginx@sha256:" + hexA}, img: dockerImage(nil, []string{"nginx@sha256:" + hexA}, nil), want: true, kind: KindExact},
	{name: "no normalization", patterns: []string{"docker.io/library/nginx:1.27"}, img: dockerImage([]string{"nginx:1.27"}, nil, nil), want: false},
	{name: "no normalization of bare repositories", patterns: []string{"docker.io/library/nginx"}, img: dockerImage([]string{"nginx:1.27"}, nil, nil), want: false},
	{name: "no aliases", patterns: []string{"k8s.gcr.io/pause:3.10"}, img: dockerImage([]string{"registry.k8s.io/pause:3.10"}, nil, nil), want: false},
	{name: "no implicit latest", patterns: []string{"nginx:latest"}, img: dockerImage([]string{"nginx:1.27"}, nil, nil), want: false},
	{name: "entries are trimmed", patterns: []string{"  nginx:1.27\t"}, img: dockerImage([]string{"nginx:1.27"}, nil, nil), want: true, kind: KindExact},
	{name: "blank entries are ignored", patterns: []string{"", "   "}, selectors: []string{"", "  "}, img: dockerImage([]string{"nginx:1.27"}, nil, nil), want: false},
	{name: "untagged image", patterns: []string{"nginx"}, img: dockerImage([]string{"<none>:<none>"}, nil, nil), want: false},
	{name: "the ID is never compared", patterns: []string{"sha256:" + hexA, hexA + "*"}, img: labeledImage{image: image{id: "sha256:" + hexA}}, want: false},
	{name: "label key", selectors: []string{"org.opencontainers.image.version"}, img: dockerImage([]string{"nginx:1.27"}, nil, map[string]string{"org.opencontainers.image.version": "1.27"}), want: true, kind: KindLabel},
	{name: "label key with an empty value", selectors: []string{"pin"}, img: dockerImage(nil, nil, map[string]string{"pin": ""}), want: true, kind: KindLabel},
	{name: "label key and value", selectors: []string{"pin=yes"}, img: dockerImage(nil, nil, map[string]string{"pin": "yes"}), want: true, kind: KindLabel},
	{name: "label value mismatch", selectors: []string{"pin=yes"}, img: dockerImage([]string{"nginx:1"}, nil, map[string]string{"pin": "no"}), want: false},
	{name: "label value is cut at the first =", selectors: []string{"a=b=c"}, img: dockerImage(nil, nil, map[string]string{"a": "b=c"}), want: true, kind: KindLabel},
	{name: "label selector trimmed", selectors: []string{" pin=yes "}, img: dockerImage(nil, nil, map[string]string{"pin": "yes"}), want: true, kind: KindLabel},
	{name: "label missing", selectors: []string{"pin"}, img: dockerImage([]string{"busybox:1.37"}, nil, map[string]string{"maintainer": "busybox"}), want: false},
	{name: "no labels given", selectors: []string{"pin"}, img: labeledImage{image: image{tags: []string{"nginx:1"}}}, want: false},
	{name: "sandbox image", sandbox: "registry.k8s.io/pause:3.10", img: dockerImage([]string{"registry.k8s.io/pause:3.10"}, nil, nil), want: true, kind: KindSandbox},
	{name: "sandbox image is exact", sandbox: "registry.k8s.io/pause:3.10", img: dockerImage([]string{"registry.k8s.io/pause:3.10.1"}, nil, nil), want: false},
	{name: "sandbox image is raw", sandbox: "docker.io/library/pause:3.10", img: dockerImage([]string{"pause:3.10"}, nil, nil), want: false},
	{name: "sandbox image against tags only", sandbox: "registry.k8s.io/pause@sha256:" + hexA, img: dockerImage(nil, []string{"registry.k8s.io/pause@sha256:" + hexA}, nil), want: false},
	{name: "sandbox image without a tag", sandbox: "registry.k8s.io/pause", img: dockerImage([]string{"registry.k8s.io/pause:latest"}, nil, nil), want: false},
}

// dockerImage returns an image as Docker lists it, with its labels.
func dockerImage(tags, digests []string, labels map[string]string) labeledImage {
	return labeledImage{image: image{id: "sha256:" + hexB, tags: tags, digests: digests}, labels: labels}
}
