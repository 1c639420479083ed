package releases

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// allRows is every table of the package.
func allRows() map[string][]Row {
	m := map[string][]Row{"defaults": defaults, "kubeadmPause": kubeadmPause,
		"kubeadmRepository": kubeadmRepository, "kubeadmPreReleases": kubeadmPreReleases,
		"supportEnds": supportEnds, "kubernetesSupport": kubernetesSupport}
	for f := range numFacts {
		m[fmt.Sprintf("fact %d", f)] = f.Rows()
	}
	return m
}

// TestRows checks every row: bounds parse and are ordered, each row says
// where it was read, a component's rows of one table do not overlap, and a
// fact's note, or the tag it was read at, names the release its range ends at.
func TestRows(t *testing.T) {
	t.Parallel()
	for name, rows := range allRows() {
		require.NotEmpty(t, rows, name)
		for i, r := range rows {
			at := fmt.Sprintf("%s row %d (%s %s)", name, i, r.Component, r.Range)
			assert.NotEmpty(t, r.Read, "%s: where it was read", at)
			assert.NotPanics(t, func() { r.Range.Contains(Version{}) }, at)
			if r.Range.From != "" && r.Range.Until != "" {
				assert.True(t, bound(r.Range.From).Less(bound(r.Range.Until)), "%s: empty range", at)
			}
			for _, o := range rows[:i] {
				if o.Component == r.Component && !strings.HasPrefix(name, "fact") {
					overlap := (o.Range.Until == "" || r.Range.From == "" || bound(r.Range.From).Less(bound(o.Range.Until))) &&
						(r.Range.Until == "" || o.Range.From == "" || bound(o.Range.From).Less(bound(r.Range.Until)))
					assert.False(t, overlap, "%s overlaps %s", at, o.Range)
				}
			}
		}
	}
	for f := range numFacts {
		note := f.Note()
		for _, r := range f.Rows() {
			if note == "" || r.Range.Until == "" {
				continue
			}
			u := bound(r.Range.Until)
			end := fmt.Sprintf("%d.%d", u.Major, u.Minor)
			assert.True(t, strings.Contains(note, end) || strings.Contains(r.Read, "@v"+end),
				"fact %d: neither the note %q nor where it was read (%q) names where %s ends", f, note, r.Read, r.Range)
		}
	}
}

func TestRangeContains(t *testing.T) {
	t.Parallel()
	tests := []struct {
		r    Range
		v    string
		want bool
	}{
		{Range{"1.7", "1.8"}, "1.7.0-beta.0", true}, // a minor bound includes its pre-releases
		{Range{"1.6.9", "1.7"}, "1.7.0-rc.1", false},
		{Range{"1.24", "1.24.9"}, "1.24.9-rc.0", true}, // a release bound comes after its pre-releases
		{Range{"2.0.0-beta.0", "2.0.0-rc.3"}, "2.0.0-rc.2", true},
		{Range{"2.0.0-beta.0", "2.0.0-rc.3"}, "2.0.0", false},
		{Range{"2.0.0-beta.0", "2.0.0-rc.3"}, "2.0.0-alpha.1", false},
		{Range{"", "1.23.0"}, "1.22.17", true},
		{Range{"1.35.0", ""}, "1.37.2", true},
		{Range{"1.35.0", ""}, "1.35.0-rc.0", false},
	}
	for _, tt := range tests {
		t.Run(tt.r.String()+"@"+tt.v, func(t *testing.T) {
			t.Parallel()
			v, err := ParseVersion(tt.v)
			require.NoError(t, err)
			assert.Equal(t, tt.want, tt.r.Contains(v), "%s.Contains(%s)", tt.r, tt.v)
		})
	}
}

// FuzzParseVersion checks the one reading of versions: an accepted
// version prints as a version that parses back to itself; a distribution's
// build suffix changes nothing; a pre-release sorts before its release.
func FuzzParseVersion(f *testing.F) {
	for _, s := range []string{"1.31", "v1.31.2", "v1.31.0-rc.1", "1.7.20+k3s1", "1.6.20~ds1", "1.2.3-", "01.2", "1.2.3.4",
		"v2.3.4-k3s1.36", "v1.36.3-rc1+rke2r1", "1:1.6.12-0ubuntu1", "2.0.0~rc.1-1", "1.6.20~ds1-1+deb12u3", "v1.7.20-12-gabcdef0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseVersion(s)
		if err != nil {
			require.ErrorIs(t, err, ErrUnknownVersion)
			assert.Equal(t, Version{}, v, "an error comes with the zero Version")
			return
		}
		back, err := ParseVersion(v.String())
		require.NoError(t, err, "ParseVersion(%q).String() = %q", s, v.String())
		assert.Equal(t, Version{Major: v.Major, Minor: v.Minor, Patch: v.Patch, Pre: v.Pre}, back, "String drops the build only")
		assert.True(t, v.Same(back))
		assert.False(t, v.Less(v))
		built, err := ParseVersion(s + "+k3s1")
		require.NoError(t, err)
		assert.True(t, v.Same(built) && v.Pre == built.Pre, "a build suffix is the release it builds")
		assert.True(t, strings.HasSuffix(built.Build, "+k3s1"), "Build keeps the suffix: %q", built.Build)
		if v.Pre != "" {
			rel := Version{Major: v.Major, Minor: v.Minor, Patch: v.Patch}
			assert.True(t, v.Less(rel) && !rel.Less(v), "%s sorts before its release", v)
		}
	})
}

// TestLookupAllocs checks that looking a fact up allocates nothing: Resolve
// does it several times per node.
func TestLookupAllocs(t *testing.T) {
	v, err := ParseVersion("2.4.2")
	require.NoError(t, err)
	allocs := testing.AllocsPerRun(100, func() {
		_, _ = ContainerdAliasNeverPinned.Holds(v)
		_, _ = DefaultImage(Containerd, v)
	})
	assert.Zero(t, allocs)
}

// TestParseVersionAsNodesSpellThem checks one reading of the versions
// nodes state: alpha, beta and rc suffixes are pre-releases, any other
// suffix a distribution build of the release (issue 51).
func TestParseVersionAsNodesSpellThem(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want string // Version.String(); "" for an error
	}{
		{"v1.35.0-rc.1", "1.35.0-rc.1"},
		{"1.35.0-rc.1", "1.35.0-rc.1"},
		{"v1.38.0-beta.0", "1.38.0-beta.0"},
		{"v1.35.0-alpha.3", "1.35.0-alpha.3"},
		{"v1.18.0-rc1", "1.18.0-rc.1"},                  // CRI-O's and RKE2's spelling
		{"v1.36.3-rc1+rke2r1", "1.36.3-rc.1"},           // an RKE2 release candidate
		{"2.0.0~rc.1-1", "2.0.0-rc.1"},                  // a Debian package of a pre-release
		{"v2.3.0-beta.1-15-gabcdef012", "2.3.0-beta.1"}, // git describe after a pre-release
		{"v2.3.4-k3s1", "2.3.4"},                        // k3s/RKE2's build of containerd
		{"v2.3.4-k3s1.36", "2.3.4"},                     // as RKE2 v1.36.4 ships it
		{"1.7.20+k3s1", "1.7.20"},
		{"v1.36.3+rke2r1", "1.36.3"},
		{"v1.33.13+rke2r2", "1.33.13"},
		{"v1.36.3+k3s1", "1.36.3"},
		{"1.6.20~ds1", "1.6.20"},
		{"1.6.20~ds1-1", "1.6.20"},
		{"1.6.20~ds1-1+deb12u3", "1.6.20"}, // Debian 12's containerd package
		{"1:1.6.12-0ubuntu1", "1.6.12"},    // an epoch
		{"1.7.28-0ubuntu1", "1.7.28"},
		{"1.31.2-1.1", "1.31.2"}, // pkgs.k8s.io's package revision
		{"v1.37.2+unknown", "1.37.2"},
		{"v1.7.20-12-gabcdef012", "1.7.20"}, // git describe after a release
		{"1.2.3+dfsg", "1.2.3"},
		{"1.31", "1.31.0"},
		{"V1.31.2", "1.31.2"},
		{"abc:1.2", ""},
		{"1.2.3.4", ""},
		{"01.2", ""},
		{"1", ""},
		{"", ""},
		{"1.2.3-", ""},
		{"1.2.3~", ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			v, err := ParseVersion(tt.in)
			if tt.want == "" {
				require.ErrorIs(t, err, ErrUnknownVersion)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, v.String())
		})
	}
}

// TestVersionsAtRowBounds checks the verdicts of issue 51 at the rows'
// bounds: a distribution build is its release, a pre-release falls where
// upstream's change put it.
func TestVersionsAtRowBounds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		fact Fact
		v    string
		want bool
	}{
		{ContainerdSandboxNotFound, "v2.3.4-k3s1", false},
		{ContainerdSandboxNotFound, "v2.3.4-k3s1.36", false},
		{ContainerdSandboxNotFound, "v2.3.3-k3s1", false}, // k3s's build carries the fix (RKE2 v1.36.3 runs it)
		{ContainerdSandboxNotFound, "v2.3.2-k3s2", false},
		{ContainerdSandboxNotFound, "v2.3.1-k3s1", true}, // not read: upstream's verdict
		{ContainerdSandboxNotFound, "v2.3.3", true},
		{ContainerdSandboxNotFound, "2.3.3~ds1-1", true}, // another distribution: upstream's verdict
		{ContainerdSandboxNotFound, "2.3.4-rc.0", true},
		{KubeletRejectsFlag, "1.35.0-rc.1", true},
		{KubeletRejectsFlag, "v1.35.0-rc.0", true},
		{KubeletRejectsFlag, "v1.35.1+k3s1", true},
		{KubeletIgnoresFlag, "1.35.0-rc.1", false},
		{KubeletIgnoresFlag, "v1.34.3+rke2r1", true},
		{KubeletIgnoresFlag, "1.34.3-0ubuntu1", true},
		{KubeletIgnoresFlag, "v1.29.0-rc.0", true},
		{KubeletProtectsDefault, "v1.29.0-rc.0", false},
		{KubeletProtectsDefault, "v1.28.15+k3s1", true},
		{KubeadmUpgradeRunsPause, "v1.18.0-beta.0", true},
		{KubeadmUpgradeRunsPause, "v1.17.17", false},
		{ContainerdConfig4, "v2.3.0-rc.0", true},
		{ContainerdConfig4, "v2.2.5-k3s2", false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d@%s", tt.fact, tt.v), func(t *testing.T) {
			t.Parallel()
			v, err := ParseVersion(tt.v)
			require.NoError(t, err)
			_, ok := tt.fact.Holds(v)
			assert.Equal(t, tt.want, ok)
		})
	}
}

// TestRancherDefaultPause checks the k3s and RKE2 default pause rows: 3.6
// until the July 2026 bump (k3s#14339), 3.10.2 from the first release of
// each line that carries it.
func TestRancherDefaultPause(t *testing.T) {
	t.Parallel()
	tests := []struct {
		comp, v, want string // want "" for unknown
	}{
		{RKE2, "v1.36.2+rke2r1", "index.docker.io/rancher/mirrored-pause:3.6"},
		{RKE2, "v1.36.3+rke2r1", "index.docker.io/rancher/mirrored-pause:3.10.2"},
		{RKE2, "v1.36.3-rc1+rke2r1", "index.docker.io/rancher/mirrored-pause:3.10.2"},
		{RKE2, "v1.36.4+rke2r1", "index.docker.io/rancher/mirrored-pause:3.10.2"},
		{RKE2, "v1.35.6+rke2r1", "index.docker.io/rancher/mirrored-pause:3.6"},
		{RKE2, "v1.35.7+rke2r1", "index.docker.io/rancher/mirrored-pause:3.10.2"},
		{RKE2, "v1.34.9+rke2r1", "index.docker.io/rancher/mirrored-pause:3.6"},
		{RKE2, "v1.34.10+rke2r1", "index.docker.io/rancher/mirrored-pause:3.10.2"},
		{RKE2, "v1.33.12+rke2r2", "index.docker.io/rancher/mirrored-pause:3.6"},
		{RKE2, "v1.33.13+rke2r2", ""}, // r1 has 3.6, r2 3.10.2: the revision decides
		{RKE2, "v1.33.14+rke2r1", "index.docker.io/rancher/mirrored-pause:3.10.2"},
		{RKE2, "v1.37.0+rke2r1", ""},
		{K3s, "v1.36.2+k3s1", ""},
		{K3s, "v1.36.1+k3s1", "rancher/mirrored-pause:3.6"},
		{K3s, "v1.36.3+k3s1", "rancher/mirrored-pause:3.10.2"},
		{K3s, "v1.34.10+k3s1", "rancher/mirrored-pause:3.10.2"},
		{K3s, "v1.33.13+k3s1", ""},
	}
	for _, tt := range tests {
		t.Run(tt.comp+"@"+tt.v, func(t *testing.T) {
			t.Parallel()
			v, err := ParseVersion(tt.v)
			require.NoError(t, err)
			r, err := DefaultImage(tt.comp, v)
			if tt.want == "" {
				require.ErrorIs(t, err, ErrUnknownVersion)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, r.Value)
		})
	}
}

// TestKubeadmNewest checks that the newest kubeadm read is the last one the
// table knows: its next pre-release is unknown.
func TestKubeadmNewest(t *testing.T) {
	t.Parallel()
	v, err := ParseVersion(KubeadmNewest)
	require.NoError(t, err)
	_, err = KubeadmPauseImage(KubeadmNewest, v, "")
	require.NoError(t, err)
	next := v
	next.Pre = "beta.1"
	require.Equal(t, "beta.0", v.Pre, "raise next with KubeadmNewest")
	_, err = KubeadmPauseImage("next", next, "")
	require.ErrorIs(t, err, ErrUnknownVersion)
}
