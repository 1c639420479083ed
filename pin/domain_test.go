package pin

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// naiveScanDomain is scanDomain one byte at a time.
func naiveScanDomain(s string) (slash int, upper, dotOrColon bool) {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '/':
			return i, upper, dotOrColon
		case 'A' <= c && c <= 'Z':
			upper = true
		case c == '.' || c == ':':
			dotOrColon = true
		}
	}
	return -1, upper, dotOrColon
}

func TestScanDomain(t *testing.T) {
	t.Parallel()
	tests := []string{
		"", "a", "A", "/", ".", ":", "/A", "/.", "A/", "./", "registry.k8s.io", "registry.K8s.io",
		"registry.k8s.iO", "@[`{", "\xc1\xda\x80\xff", "abcdefgZ", "Zbcdefgh", "abcdefghZ", "\xc1bcdefgh",
		"0123456789:.-_", "localhost:5000/a", "LOCALHOST/a", "localhost/a", "library/pause", "docker.io/library/x",
		"registry.example.com/team1/app:1.0", "abcdefg/.", "abcdefgh/.", "abcdefghijklmno/", "abcdefghijklmnop/",
		"a/./:/B", "-/.", ".......//////", "\x00/.", "\x2e\x2f\x2f\x2e",
	}
	for c := 0; c < 256; c++ { // every byte at every position of a word and a tail
		for _, pos := range []int{0, 3, 7, 8, 10} {
			b := []byte("abcdefghijk")
			b[pos] = byte(c)
			tests = append(tests, string(b))
			b = []byte("abcdefghijk")
			b[pos] = '/'
			for _, after := range []int{1, 2, 7} { // bytes after the '/' do not count
				if pos+after < len(b) {
					b2 := slices.Clone(b)
					b2[pos+after] = byte(c)
					tests = append(tests, string(b2))
				}
			}
			if pos > 0 { // and bytes before it do
				b2 := slices.Clone(b)
				b2[pos-1] = byte(c)
				tests = append(tests, string(b2))
			}
		}
	}
	for _, s := range tests {
		slash, upper, dc := scanDomain(s)
		wSlash, wUpper, wDC := naiveScanDomain(s)
		assert.Equal(t, []any{wSlash, wUpper, wDC}, []any{slash, upper, dc}, "%q", s)
	}
}

func FuzzScanDomain(f *testing.F) {
	f.Add("registry.K8s.io/pause")
	f.Fuzz(func(t *testing.T, s string) {
		slash, upper, dc := scanDomain(s)
		wSlash, wUpper, wDC := naiveScanDomain(s)
		if slash != wSlash || upper != wUpper || dc != wDC {
			t.Fatalf("scanDomain(%q) = %d, %v, %v; want %d, %v, %v", s, slash, upper, dc, wSlash, wUpper, wDC)
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
