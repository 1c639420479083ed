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

// FuzzParseVersion checks that an accepted version prints as a version
// that parses back to itself.
func FuzzParseVersion(f *testing.F) {
	for _, s := range []string{"1.31", "v1.31.2", "v1.31.0-rc.1", "1.7.20+k3s1", "1.6.20~ds1", "1.2.3-", "01.2", "1.2.3.4"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseVersion(s)
		if err != nil {
			assert.Equal(t, Version{}, v, "an error comes with the zero Version")
			return
		}
		back, err := ParseVersion(v.String())
		require.NoError(t, err, "ParseVersion(%q).String() = %q", s, v.String())
		assert.Equal(t, v, back)
		assert.False(t, v.Less(v))
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
