package pin

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHasUpper(t *testing.T) {
	t.Parallel()
	naive := func(s string) bool {
		for i := 0; i < len(s); i++ {
			if 'A' <= s[i] && s[i] <= 'Z' {
				return true
			}
		}
		return false
	}
	tests := []string{
		"", "a", "A", "registry.k8s.io", "registry.K8s.io", "registry.k8s.iO", "@[`{", "\xc1\xda\x80\xff",
		"abcdefgZ", "Zbcdefgh", "abcdefghZ", "\xc1bcdefgh", "0123456789:.-_", "localhost:5000", "LOCALHOST",
	}
	for c := 0; c < 256; c++ { // every byte at every position of a word and a tail
		for _, pos := range []int{0, 3, 7, 8, 10} {
			b := []byte("abcdefghijk")
			b[pos] = byte(c)
			tests = append(tests, string(b))
		}
	}
	for _, s := range tests {
		assert.Equal(t, naive(s), hasUpper(s), "%q", s)
	}
}

func FuzzHasUpper(f *testing.F) {
	f.Add("registry.K8s.io")
	f.Fuzz(func(t *testing.T, s string) {
		want := false
		for i := 0; i < len(s); i++ {
			want = want || ('A' <= s[i] && s[i] <= 'Z')
		}
		if hasUpper(s) != want {
			t.Fatalf("hasUpper(%q) = %v", s, !want)
		}
	})
}

// TestKeywordPaths checks that both keyword filters, by rarest byte (few
// groups) and by byte pairs (many), find the first keyword in pattern
// order that the canonical name contains.
func TestKeywordPaths(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		keywords []string
		wantRare bool
	}{
		{name: "one group", keywords: []string{"keyword0", "keyword1", "work"}, wantRare: true},
		{name: "four groups", keywords: []string{"pause", "agent", "qq", "x"}, wantRare: true},
		{name: "many groups", keywords: []string{"pause", "agent", "qq", "x", "zz", "jj"}, wantRare: false},
		{name: "overlapping", keywords: []string{"team", "eam1", "k8s", "s.io/pa"}, wantRare: true},
	}
	names := []string{
		"registry.k8s.io/pause:3.10", "quay.io/agent/x:1", "docker.io/library/jj:1", "example.com/team1/app:2",
		"example.com/qqzz/keyword1:1", "example.com/networker:1", "example.com/a:1", "ghcr.io/x/y@sha256:" + hexA,
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			patterns := make([]string, len(tt.keywords))
			for i, k := range tt.keywords {
				patterns[i] = "*" + k + "*"
			}
			m, err := Compile(patterns)
			require.NoError(t, err)
			assert.Equal(t, tt.wantRare, m.rare != nil, "filter by rarest byte")
			for _, n := range names {
				want := ""
				repo, _, _ := strings.Cut(n, "@")
				if i := strings.LastIndexByte(repo, ':'); i > strings.LastIndexByte(repo, '/') {
					repo = repo[:i]
				}
				for _, k := range tt.keywords {
					if strings.Contains(repo, k) {
						want = "*" + k + "*"
						break
					}
				}
				img := &image{tags: []string{n}}
				if strings.Contains(n, "@") {
					img = &image{digests: []string{n}}
				}
				got, ok := m.Explain(img)
				assert.Equal(t, want != "", ok, "%s pinned", n)
				assert.Equal(t, want, got.Pattern, "%s: rule", n)
			}
		})
	}
}
