package pin

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// criDockerdReference is cri-dockerd's pinning written out from its rules
// (issue 47; core/pinned.go and core/image.go), one entry at a time, for
// FuzzCRIDockerdCompat and the table to be checked against.
func criDockerdReference(patterns, selectors []string, sandbox string, tags, digests []string, labels map[string]string) bool {
	for _, t := range tags {
		if sandbox != "" && t == sandbox {
			return true
		}
	}
	for _, sel := range selectors {
		sel = strings.TrimSpace(sel)
		if sel == "" {
			continue
		}
		k, v, hasValue := strings.Cut(sel, "=")
		if lv, ok := labels[k]; ok && (!hasValue || lv == v) {
			return true
		}
	}
	for _, n := range slices.Concat(tags, digests) {
		for _, p := range patterns {
			p = strings.TrimSpace(p)
			lastSlash := strings.LastIndex(p, "/")
			switch {
			case p == "":
			case strings.HasSuffix(p, "*"):
				if strings.HasPrefix(n, p[:len(p)-1]) {
					return true
				}
			case strings.Contains(p, "@") || strings.Contains(p[lastSlash+1:], ":"):
				if n == p {
					return true
				}
			default:
				repo, _, _ := strings.Cut(n, "@")
				slash := strings.LastIndex(repo, "/")
				if c := strings.LastIndex(repo[slash+1:], ":"); c >= 0 {
					repo = repo[:slash+1+c]
				}
				if repo == p {
					return true
				}
			}
		}
	}
	return false
}

func TestCRIDockerdCompat(t *testing.T) {
	t.Parallel()
	for _, tt := range criDockerdCases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, err := Compile(tt.patterns, WithMode(ModeCRIDockerdCompat), WithImageLabels(tt.selectors...),
				WithSandboxImage(tt.sandbox), WithSource("cri-dockerd.service"))
			require.NoError(t, err)
			assert.Equal(t, tt.want, m.IsPinnedImage(tt.img), "CRIDockerdCompat %q %q IsPinnedImage(%+v)", tt.patterns, tt.selectors, tt.img)
			assert.Equal(t, tt.want, criDockerdReference(tt.patterns, tt.selectors, tt.sandbox, tt.img.tags, tt.img.digests, tt.img.labels),
				"the reference disagrees with the table")
			got, ok := m.Explain(tt.img)
			require.Equal(t, tt.want, ok, "Explain")
			if !ok {
				return
			}
			assert.Equal(t, tt.kind, got.Kind)
			assert.Equal(t, "cri-dockerd.service", got.Source)
			switch got.Kind {
			case KindSandbox:
				assert.Equal(t, -1, got.Index)
				assert.Equal(t, tt.sandbox, got.Pattern)
			case KindLabel:
				assert.Equal(t, tt.selectors[got.Index], got.Pattern)
				k, _, _ := strings.Cut(got.Name, "=")
				assert.Contains(t, tt.img.labels, k)
			default:
				assert.Equal(t, tt.patterns[got.Index], got.Pattern)
				assert.Contains(t, slices.Concat(tt.img.tags, tt.img.digests), got.Name)
				// One name alone: IsPinned reads it as Docker lists it.
				assert.True(t, m.IsPinned(got.Name), "IsPinned(%q)", got.Name)
			}
		})
	}
}

func TestCRIDockerdExplain(t *testing.T) {
	t.Parallel()
	m, err := Compile([]string{"quay.io/*", "nginx", "nginx:1.27"}, WithMode(ModeCRIDockerdCompat),
		WithImageLabels("", "tier=platform"), WithSandboxImage("registry.k8s.io/pause:3.10"))
	require.NoError(t, err)
	tests := []struct {
		name string
		img  Image
		want Match // Source is ""
	}{
		{name: "first rule in pattern order", img: image{tags: []string{"nginx:1.27"}},
			want: Match{Pattern: "nginx", Name: "nginx:1.27", Index: 1, Kind: KindRepository}},
		{name: "tags before digests", img: image{tags: []string{"redis:7", "quay.io/x:1"}, digests: []string{"nginx@sha256:" + hexA}},
			want: Match{Pattern: "quay.io/*", Name: "quay.io/x:1", Index: 0, Kind: KindPrefix}},
		{name: "labels before names", img: labeledImage{image: image{tags: []string{"nginx:1"}}, labels: map[string]string{"tier": "platform"}},
			want: Match{Pattern: "tier=platform", Name: "tier=platform", Index: 1, Kind: KindLabel}},
		{name: "sandbox first", img: labeledImage{image: image{tags: []string{"nginx:1", "registry.k8s.io/pause:3.10"}}, labels: map[string]string{"tier": "platform"}},
			want: Match{Pattern: "registry.k8s.io/pause:3.10", Name: "registry.k8s.io/pause:3.10", Index: -1, Kind: KindSandbox}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := m.Explain(tt.img)
			require.True(t, ok)
			assert.Equal(t, tt.want, got)
		})
	}
	// Three patterns, one label selector (the blank one is none) and the
	// sandbox image.
	assert.Equal(t, 5, m.Len())
	assert.True(t, m.IsPinned("registry.k8s.io/pause:3.10"))
	assert.False(t, m.IsPinned("registry.k8s.io/pause:3.10@sha256:"+hexA), "the sandbox image is compared with repo tags only")
	j := Join(m, nil)
	got, ok := j.Explain(image{tags: []string{"nginx:2"}})
	assert.True(t, ok && got.Kind == KindRepository && j.IsPinnedImage(image{tags: []string{"nginx:2"}}), "through a Join")
}

func TestCRIDockerdCompileOptions(t *testing.T) {
	t.Parallel()
	_, err := Compile(nil, WithImageLabels("pin"))
	require.Error(t, err, "labels need ModeCRIDockerdCompat")
	_, err = Compile(nil, WithMode(ModeCRIOCompat), WithSandboxImage("pause:3.10"))
	require.Error(t, err, "a sandbox image needs ModeCRIDockerdCompat")
	// cri-dockerd accepts every entry; so does Compile.
	m, err := Compile([]string{"*", "**", "\xff", "docker.io/library/x", "a b", "@"}, WithMode(ModeCRIDockerdCompat))
	require.NoError(t, err)
	assert.Equal(t, 6, m.Len())
}

func TestCRIDockerdNeverMatches(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		pattern string // a --pinned-images entry
		never   bool   // no name Docker lists matches it
	}{
		{name: "official image, fully qualified", pattern: "docker.io/library/nginx:1.27", never: true},
		{name: "user image, fully qualified", pattern: "docker.io/team/app:1", never: true},
		{name: "bare repository, fully qualified", pattern: "docker.io/library/nginx", never: true},
		{name: "digest, fully qualified", pattern: "docker.io/library/nginx@sha256:" + hexA, never: true},
		{name: "legacy index domain", pattern: "index.docker.io/library/nginx:1.27", never: true},
		{name: "Docker Hub prefix", pattern: "docker.io/*", never: true},
		{name: "Docker Hub prefix deeper", pattern: "docker.io/library/ng*", never: true},
		{name: "trimmed first", pattern: "  docker.io/x/y  ", never: true},
		{name: "library official", pattern: "library/nginx:1.27", never: true},
		{name: "library bare repository", pattern: "library/nginx", never: true},
		{name: "library nested is listed as is", pattern: "library/a/b:1", never: false},
		{name: "library prefix may match nested", pattern: "library/ngin*", never: false},
		{name: "familiar", pattern: "nginx:1.27", never: false},
		{name: "familiar user", pattern: "team/app", never: false},
		{name: "other registry", pattern: "registry.k8s.io/pause:3.10", never: false},
		{name: "registry-1 is not normalized", pattern: "registry-1.docker.io/library/nginx:1", never: false},
		{name: "docker.io without a slash is a prefix of other domains", pattern: "docker.io*", never: false},
		{name: "lookalike domain", pattern: "docker.io.example.com/x:1", never: false},
		{name: "blank is no rule", pattern: "  ", never: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			reason, never := CRIDockerdNeverMatches(tt.pattern)
			assert.Equal(t, tt.never, never, "CRIDockerdNeverMatches(%q) = %q, %v", tt.pattern, reason, never)
			assert.Equal(t, never, reason != "", "a reason comes with never")
		})
	}
	reason, _ := CRIDockerdNeverMatches("docker.io/library/nginx:1.27")
	assert.Contains(t, reason, `"nginx:1.27"`, "the reason says how Docker lists it")
}

// TestCRIDockerdDoesNotAllocate: names as Docker lists them, hit or miss,
// labels included, never allocate.
func TestCRIDockerdDoesNotAllocate(t *testing.T) { //nolint:paralleltest // AllocsPerRun refuses parallel tests
	m := benchCRIDockerdMatcher(t, 1000)
	for _, img := range benchCRIDockerdImages {
		p := &img.img // a pointer, as *runtimeapi.Image: no boxing
		allocs := testing.AllocsPerRun(100, func() { m.IsPinnedImage(p) })
		assert.Zero(t, allocs, "IsPinnedImage(%s) allocates", img.name)
		allocs = testing.AllocsPerRun(100, func() { m.IsPinned(img.img.tags[0]) })
		assert.Zero(t, allocs, "IsPinned(%q) allocates", img.img.tags[0])
	}
}
