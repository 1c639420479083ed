package pin

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/reference"
)

func TestStrict(t *testing.T) {
	t.Parallel()
	for _, tt := range strictCases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, err := Compile(tt.patterns)
			require.NoError(t, err)
			assert.Equal(t, tt.want, m.IsPinned(tt.image), "Compile(%q).IsPinned(%q)", tt.patterns, tt.image)
			img := image{tags: []string{tt.image}}
			assert.Equal(t, tt.want, m.IsPinnedImage(img), "IsPinnedImage with the name as a repo tag")
			got, ok := m.Explain(img)
			assert.Equal(t, tt.want, ok)
			if ok {
				assert.Equal(t, tt.patterns[got.Index], got.Pattern)
				assert.Equal(t, tt.image, got.Name)
			}
		})
	}
}

func TestCRIOCompat(t *testing.T) {
	t.Parallel()
	for _, tt := range crioCases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, err := Compile(tt.patterns, WithMode(ModeCRIOCompat))
			require.NoError(t, err)
			assert.Equal(t, tt.want, m.IsPinned(tt.image), "CRIOCompat %q IsPinned(%q)", tt.patterns, tt.image)
			assert.Equal(t, tt.want, crioRegexpBaseline(tt.patterns, tt.image), "the regexps CRI-O builds disagree with the table")
		})
	}
}

func TestCompileErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		patterns []string // compiled
		mode     Mode
		bad      []int // indexes reported, in order
	}{
		{name: "star", patterns: []string{"*"}, bad: []int{0}},
		{name: "double star", patterns: []string{"**"}, bad: []int{0}},
		{name: "suffix glob", patterns: []string{"*pause"}, bad: []int{0}},
		{name: "inner star", patterns: []string{"registry.k8s.io/*/pause"}, bad: []int{0}},
		{name: "two trailing stars", patterns: []string{"registry.k8s.io/**"}, bad: []int{0}},
		{name: "star inside keyword", patterns: []string{"*a*b*"}, bad: []int{0}},
		{name: "bad reference", patterns: []string{"registry.k8s.io/Pause:3.9"}, bad: []int{0}},
		{name: "bad glob prefix", patterns: []string{"registry.k8s.io//*"}, bad: []int{0}},
		{name: "uppercase glob path", patterns: []string{"registry.k8s.io/Pau*"}, bad: []int{0}},
		{name: "all reported", patterns: []string{"ok.io/x:1", "*", "", "pause:", "*x"}, bad: []int{1, 3, 4}},
		{name: "crio star", patterns: []string{"a", "*"}, mode: ModeCRIOCompat, bad: []int{1}},
		{name: "crio invalid utf-8", patterns: []string{"\xff*"}, mode: ModeCRIOCompat, bad: []int{0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, err := Compile(tt.patterns, WithMode(tt.mode))
			require.Error(t, err)
			assert.Nil(t, m)
			assert.ErrorIs(t, err, ErrInvalidPattern)
			var joined interface{ Unwrap() []error }
			require.ErrorAs(t, err, &joined)
			var got []int
			for _, e := range joined.Unwrap() {
				var pe *PatternError
				require.ErrorAs(t, e, &pe)
				assert.Equal(t, tt.patterns[pe.Index], pe.Pattern)
				assert.Contains(t, e.Error(), fmt.Sprintf("%q", pe.Pattern))
				got = append(got, pe.Index)
			}
			assert.Equal(t, tt.bad, got)
		})
	}
}

func TestCompileErrorWrapsReferenceError(t *testing.T) {
	t.Parallel()
	_, err := Compile([]string{"registry.k8s.io/Pause:3.9"})
	assert.ErrorIs(t, err, reference.ErrNameContainsUppercase)
	var re *reference.ParseError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, 16, re.Offset)
}

func TestImage(t *testing.T) {
	t.Parallel()
	m, err := Compile([]string{"registry.k8s.io/pause:3.10.1", "sha256:" + hexB}, WithSource("config.toml:12"))
	require.NoError(t, err)
	pause := image{id: "sha256:" + hexA, tags: []string{"registry.k8s.io/pause:3.10.1"}, digests: []string{"registry.k8s.io/pause@sha256:" + hexA}}
	byID := image{id: "sha256:" + hexB}
	other := image{id: "sha256:" + hexA, tags: []string{"quay.io/x:1"}, digests: []string{"quay.io/x@sha256:" + hexA}}

	got, ok := m.Explain(pause)
	require.True(t, ok)
	assert.Equal(t, Match{Pattern: "registry.k8s.io/pause:3.10.1", Source: "config.toml:12", Name: "registry.k8s.io/pause:3.10.1", Index: 0, Kind: KindTag}, got)
	got, ok = m.Explain(byID)
	require.True(t, ok)
	assert.Equal(t, Match{Pattern: "sha256:" + hexB, Source: "config.toml:12", Name: "sha256:" + hexB, Index: 1, Kind: KindImageID}, got)
	assert.False(t, m.IsPinnedImage(other))
	assert.False(t, m.IsPinnedImage(nil))
	assert.False(t, m.IsPinnedImage(image{}))
}

func TestNilAndZero(t *testing.T) {
	t.Parallel()
	img := image{tags: []string{"registry.k8s.io/pause:3.10"}}
	var nilM *Matcher
	assert.False(t, nilM.IsPinned("registry.k8s.io/pause:3.10"))
	assert.False(t, nilM.IsPinnedImage(img))
	_, ok := nilM.Explain(img)
	assert.False(t, ok)
	var zero Matcher
	assert.False(t, zero.IsPinned("registry.k8s.io/pause:3.10"))
	assert.False(t, zero.IsPinnedImage(img))
	var s Set
	assert.Nil(t, s.Load())
	assert.False(t, s.Load().IsPinnedImage(img))
}

func TestWithAliases(t *testing.T) {
	t.Parallel()
	mirror, err := reference.DefaultAliases().With(reference.Alias{From: "mirror.corp:5000/k8s", To: "registry.k8s.io"})
	require.NoError(t, err)
	m, err := Compile([]string{"registry.k8s.io/pause:3.10"}, WithAliases(mirror))
	require.NoError(t, err)
	assert.True(t, m.IsPinned("mirror.corp:5000/k8s/pause:3.10"))
	assert.False(t, m.IsPinned("mirror.corp:5000/k8sx/pause:3.10"))

	// nil is the defaults, as resolve.Options.Aliases nil is (issue 52);
	// reference.NoAliases is none.
	for _, tt := range []struct {
		name    string
		aliases *reference.Aliases
		gcr     bool // k8s.gcr.io/pause:3.10 is pinned
	}{
		{"nil", nil, true},
		{"defaults", reference.DefaultAliases(), true},
		{"none", reference.NoAliases(), false},
	} {
		m, err := Compile([]string{"registry.k8s.io/pause:3.10"}, WithAliases(tt.aliases))
		require.NoError(t, err, tt.name)
		assert.Equal(t, tt.gcr, m.IsPinned("k8s.gcr.io/pause:3.10"), tt.name)
		assert.True(t, m.IsPinned("registry.k8s.io/pause:3.10"), tt.name)
	}
}

func TestJoin(t *testing.T) {
	t.Parallel()
	strict, err := Compile([]string{"registry.k8s.io/pause:3.10"}, WithSource("containerd"))
	require.NoError(t, err)
	crio, err := Compile([]string{"quay.io/*"}, WithMode(ModeCRIOCompat), WithSource("crio.conf"))
	require.NoError(t, err)
	j := Join(strict, nil, crio)
	assert.True(t, j.IsPinned("k8s.gcr.io/pause:3.10"))
	got, ok := j.Explain(image{tags: []string{"evil.com/quay.io/x:1"}})
	require.True(t, ok)
	assert.Equal(t, "crio.conf", got.Source)
	assert.Equal(t, KindContains, got.Kind)
	assert.False(t, Join().IsPinned("quay.io/x:1"))

	// Strict parts merge into one matcher for IsPinned and IsPinnedImage;
	// Explain still names the part that pins, first part first.
	globs, err := Compile([]string{"registry.example.com/infra/*", "*pause*"}, WithSource("--pin"))
	require.NoError(t, err)
	ids, err := Compile([]string{"sha256:" + strings.Repeat("ab", 32), "registry.k8s.io/pause:3.10"}, WithSource("ids"))
	require.NoError(t, err)
	merged := Join(Join(strict, crio), globs, ids, Join())
	require.Len(t, merged.fast, 2, "the Strict parts merged, the CRIOCompat one apart")
	for _, tt := range []struct {
		img    image
		pinned bool
		source string
	}{
		{img: image{tags: []string{"registry.k8s.io/pause:3.10"}}, pinned: true, source: "containerd"},
		{img: image{tags: []string{"registry.example.com/infra/x:1"}}, pinned: true, source: "--pin"},
		{img: image{tags: []string{"k8s.gcr.io/pause:3.9"}}, pinned: true, source: "--pin"},
		{img: image{id: "sha256:" + strings.Repeat("ab", 32)}, pinned: true, source: "ids"},
		{img: image{digests: []string{"docker.io/x/y@sha256:" + strings.Repeat("ab", 32)}}, pinned: true, source: "ids"},
		{img: image{tags: []string{"evil.com/quay.io/x:1"}}, pinned: true, source: "crio.conf"},
		{img: image{tags: []string{"registry.example.com/infra2/x:1"}}},
	} {
		assert.Equal(t, tt.pinned, merged.IsPinnedImage(tt.img), "%+v", tt.img)
		got, ok := merged.Explain(tt.img)
		assert.Equal(t, tt.pinned, ok, "%+v", tt.img)
		assert.Equal(t, tt.source, got.Source, "%+v", tt.img)
		for _, n := range append(tt.img.tags, tt.img.digests...) {
			assert.Equal(t, tt.pinned, merged.IsPinned(n), n)
		}
	}
}

func TestModeText(t *testing.T) {
	t.Parallel()
	for _, m := range []Mode{ModeStrict, ModeCRIOCompat, ModeCRIDockerdCompat} {
		b, err := m.MarshalText()
		require.NoError(t, err)
		var back Mode
		require.NoError(t, back.UnmarshalText(b))
		assert.Equal(t, m, back)
		assert.True(t, m.Known(), "%s", m)
	}
	var m Mode
	assert.Error(t, m.UnmarshalText([]byte("Loose Mode")))
	_, err := Compile(nil, WithMode("loose"))
	assert.ErrorIs(t, err, ErrUnknownMode)
	assert.ErrorContains(t, err, `"loose"`)
	zero, err := Compile([]string{"registry.k8s.io/pause:3.10"}, WithMode(""))
	require.NoError(t, err)
	assert.True(t, zero.IsPinned("registry.k8s.io/pause:3.10"), "the zero Mode compiles as Strict")
	assert.Equal(t, "glob", KindGlob.String())
	for k, want := range map[Kind]string{KindRepository: "repository", KindPrefix: "prefix", KindLabel: "label", KindSandbox: "sandbox"} {
		assert.Equal(t, want, k.String())
	}
	assert.Equal(t, "cri-dockerd-compat", ModeCRIDockerdCompat.String())
}

// TestIsPinnedDoesNotAllocate enforces the hot-path promise: canonical names,
// Docker's familiar names and IDs never allocate, hit or miss.
func TestIsPinnedDoesNotAllocate(t *testing.T) { //nolint:paralleltest // AllocsPerRun refuses parallel tests
	m := benchMatcher(t, 1000)
	// As cri-dockerd lists images: Docker's familiar names.
	dockerHit := &image{id: "sha256:" + hexA, tags: []string{"registry.k8s.io/pause:3.10.1"}, digests: []string{"registry.k8s.io/pause@sha256:" + hexA}}
	dockerMiss := &image{id: "sha256:" + hexB, tags: []string{"busybox:1.36", "team/app:2"},
		digests: []string{"busybox@sha256:" + hexB, "team/app@sha256:" + hexA}}
	hub, err := Compile([]string{"busybox:1.36", "docker.io/team/*"})
	require.NoError(t, err)
	dockerHubHit := &image{id: "sha256:" + hexB, tags: []string{"busybox:1.36"}, digests: []string{"busybox@sha256:" + hexB}}
	// Beside a Docker Hub glob: "docker.io/team/*" is compared with
	// "docker.io/other/app" without building it.
	dockerHubMiss := &image{id: "sha256:" + hexB, tags: []string{"other/app:2", "busybox:1.37"}, digests: []string{"other/app@sha256:" + hexA}}
	for _, c := range []struct {
		m   *Matcher
		img *image
	}{{m, dockerHit}, {m, dockerMiss}, {hub, dockerHubHit}, {hub, dockerHubMiss}} {
		allocs := testing.AllocsPerRun(100, func() { c.m.IsPinnedImage(c.img) })
		assert.Zero(t, allocs, "IsPinnedImage(%v) allocates", c.img.tags)
	}
	for _, img := range []*image{benchHit, benchMiss, benchGlobHit} {
		allocs := testing.AllocsPerRun(100, func() { m.IsPinnedImage(img) })
		assert.Zero(t, allocs, "IsPinnedImage(%v) allocates", img.tags)
	}
	allocs := testing.AllocsPerRun(100, func() { m.IsPinned("sha256:" + hexA) })
	assert.Zero(t, allocs, "IsPinned(image ID) allocates")
}

func TestSetRace(t *testing.T) {
	t.Parallel()
	var s Set
	a, err := Compile([]string{"registry.k8s.io/pause:3.10"})
	require.NoError(t, err)
	b, err := Compile([]string{"registry.k8s.io/*"})
	require.NoError(t, err)
	s.Store(a)
	img := image{tags: []string{"registry.k8s.io/pause:3.10"}, digests: []string{"registry.k8s.io/pause@sha256:" + hexA}}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if !s.Load().IsPinnedImage(img) {
					t.Error("a stored matcher lost the pin")
					return
				}
			}
		}()
	}
	for i := range 2000 {
		if i%2 == 0 {
			s.Store(b)
		} else {
			s.Store(a)
		}
	}
	close(stop)
	wg.Wait()
}

func TestPatternErrorMessage(t *testing.T) {
	t.Parallel()
	_, err := Compile([]string{"x", "*"})
	require.Error(t, err)
	assert.Equal(t, `pattern 1 "*": invalid pin pattern: "*" would pin every image; list the images instead`, err.Error())
	assert.True(t, errors.Is(err, ErrInvalidPattern))
}

// TestCRIOCompatImageNames checks which of an image's names CRIOCompat reads:
// CRI-O matches the names it stores (tags, or digests of an image pulled by
// digest only), never the repo digests it makes up beside tags, nor the ID.
// TestLiveCRIOCompat in criinfo/cri saw CRI-O 1.36.3 pin none of its tagged
// images for "*@*" and "*sha256*".
func TestCRIOCompatImageNames(t *testing.T) {
	t.Parallel()
	tagged := image{id: hexA, tags: []string{"quay.io/x:1"}, digests: []string{"quay.io/x@sha256:" + hexB}}
	byDigest := image{id: hexA, digests: []string{"quay.io/x@sha256:" + hexB}}
	tests := []struct {
		pattern        string
		tagged, digest bool
	}{
		{pattern: "*@*", tagged: false, digest: true},
		{pattern: "*sha256*", tagged: false, digest: true},
		{pattern: "*" + hexA[:12] + "*", tagged: false, digest: false}, // the ID
		{pattern: "quay.io/*", tagged: true, digest: true},
		{pattern: "quay.io/x:1", tagged: true, digest: false},
	}
	for _, tt := range tests {
		m, err := Compile([]string{tt.pattern}, WithMode(ModeCRIOCompat))
		require.NoError(t, err)
		assert.Equal(t, tt.tagged, m.IsPinnedImage(tagged), "%q on a tagged image", tt.pattern)
		assert.Equal(t, tt.digest, m.IsPinnedImage(byDigest), "%q on an image pulled by digest only", tt.pattern)
	}
	// Strict mode still reads every name and the ID.
	strict, err := Compile([]string{"sha256:" + hexA})
	require.NoError(t, err)
	assert.True(t, strict.IsPinnedImage(tagged))
}

func TestLen(t *testing.T) {
	t.Parallel()
	strict, err := Compile([]string{"registry.k8s.io/pause:3.10", "", "quay.io/*"})
	require.NoError(t, err)
	crio, err := Compile([]string{"", "registry.k8s.io/pause:3.10", "*pause*"}, WithMode(ModeCRIOCompat))
	require.NoError(t, err)
	tests := []struct {
		name string
		m    *Matcher
		want int // rules: "" is none in Strict mode, one in CRIOCompat
	}{
		{name: "nil", m: nil, want: 0},
		{name: "strict", m: strict, want: 2},
		{name: "cri-o-compat", m: crio, want: 3},
		{name: "join", m: Join(strict, nil, Join(crio, strict)), want: 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, tt.m.Len())
		})
	}
	assert.False(t, crio.IsPinned("quay.io/team/app:1"), "an empty CRI-O pattern pins no name")
}

// TestMatchJSON: a Match round-trips through JSON with its kind as a name;
// a kind of a later version decodes, text that is no word is an error.
func TestMatchJSON(t *testing.T) {
	t.Parallel()
	m := Match{Pattern: "k8s.gcr.io/pause:3.10", Source: "node", Name: "registry.k8s.io/pause:3.10", Index: 2, Kind: KindTag}
	b, err := json.Marshal(m)
	require.NoError(t, err)
	assert.JSONEq(t, `{"pattern":"k8s.gcr.io/pause:3.10","source":"node","name":"registry.k8s.io/pause:3.10","index":2,"kind":"tag"}`, string(b))
	var back Match
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, m, back)
	for _, k := range allKinds {
		var got Kind
		require.NoError(t, got.UnmarshalText([]byte(k.String())), "kind %s", k)
		assert.Equal(t, k, got)
	}
	require.NoError(t, json.Unmarshal([]byte(`{"kind":"regex"}`), &back))
	assert.Equal(t, Kind("regex"), back.Kind)
	assert.Error(t, json.Unmarshal([]byte(`{"kind":"Not a kind"}`), &back))
	b, err = json.Marshal(Match{})
	require.NoError(t, err)
	assert.JSONEq(t, `{"pattern":"","name":""}`, string(b), "the zero Match: no kind, no index")
}

// TestPatternErrorBounded: hostile pattern lists make short errors. Before
// issue 52 a 1 MiB pattern made a 1 MiB error and 100,000 bad patterns an
// error of 11.6 MB.
func TestPatternErrorBounded(t *testing.T) {
	t.Parallel()
	huge := strings.Repeat("é", 1<<19) + "*x" // 1 MiB; '*' inside is an error
	many := make([]string, 100_000)
	for i := range many {
		many[i] = fmt.Sprintf("bad*pattern%d", i)
	}
	tests := []struct {
		name      string
		patterns  []string
		mode      Mode
		wantIndex int // Index of the first *PatternError
		maxLen    int // bound on len(err.Error())
	}{
		{name: "1 MiB pattern", patterns: []string{"pause:3.10", huge}, wantIndex: 1, maxLen: 400},
		{name: "1 MiB of stars", patterns: []string{strings.Repeat("*", 1<<20)}, maxLen: 400},
		{name: "100k bad patterns", patterns: many, maxLen: 4000},
		{name: "100k bad CRI-O patterns", patterns: slices.Repeat([]string{"*"}, 100_000), mode: ModeCRIOCompat, maxLen: 4000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, err := Compile(tt.patterns, WithMode(tt.mode))
			require.Error(t, err)
			assert.Nil(t, m)
			assert.ErrorIs(t, err, ErrInvalidPattern)
			var pe *PatternError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, tt.wantIndex, pe.Index)
			assert.Equal(t, tt.patterns[tt.wantIndex], pe.Pattern, "the field keeps the whole pattern")
			assert.LessOrEqual(t, len(err.Error()), tt.maxLen, "Compile error is %d bytes", len(err.Error()))
			assert.True(t, utf8.ValidString(err.Error()))
		})
	}
	_, err := Compile(many)
	assert.Contains(t, err.Error(), "invalid pin pattern: 99990 more")
}

// TestCompileNilOption: a nil Option is ignored, not a panic.
func TestCompileNilOption(t *testing.T) {
	t.Parallel()
	var none Option
	m, err := Compile([]string{"registry.k8s.io/pause:3.10"}, none, WithMode(ModeStrict), nil)
	require.NoError(t, err)
	assert.True(t, m.IsPinned("k8s.gcr.io/pause:3.10"), "the default aliases still apply")
}

// TestMatchJSONNoMatch: the zero Match (no match) and a match of pattern 0
// marshal differently (before issue 52 both held "index":0), and each
// unmarshals back to itself.
func TestMatchJSONNoMatch(t *testing.T) {
	t.Parallel()
	m, err := Compile([]string{"registry.k8s.io/pause:3.10"})
	require.NoError(t, err)
	hit, ok := m.Explain(image{tags: []string{"registry.k8s.io/pause:3.10"}})
	require.True(t, ok)
	miss, ok := m.Explain(image{tags: []string{"nginx:1"}})
	require.False(t, ok)
	tests := []struct {
		name  string
		match Match  // what Explain returned
		want  string // its JSON
	}{
		{name: "no match", match: miss, want: `{"pattern":"","name":""}`},
		{name: "pattern 0", match: hit, want: `{"pattern":"registry.k8s.io/pause:3.10","name":"registry.k8s.io/pause:3.10","index":0,"kind":"tag"}`},
		{name: "sandbox", match: Match{Pattern: "p", Name: "p", Index: -1, Kind: KindSandbox}, want: `{"pattern":"p","name":"p","index":-1,"kind":"sandbox"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, err := json.Marshal(tt.match)
			require.NoError(t, err)
			assert.JSONEq(t, tt.want, string(b))
			var back Match
			require.NoError(t, json.Unmarshal(b, &back))
			assert.Equal(t, tt.match, back)
		})
	}
}
