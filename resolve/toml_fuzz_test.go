package resolve

import (
	"errors"
	"testing"

	"github.com/pelletier/go-toml/v2"
	"github.com/stretchr/testify/assert"
)

// FuzzTOML checks parseTOML against go-toml's decoder (what containerd 2.x
// and CRI-O read their configs with): a document go-toml accepts must be
// accepted with the same values, and one it refuses must be refused, each
// error a *ConfigError with a line inside the file.
func FuzzTOML(f *testing.F) {
	for _, d := range tomlGood {
		f.Add([]byte(d))
	}
	for _, tt := range tomlErrors {
		f.Add([]byte(tt.content))
	}
	for _, d := range tomlEdges {
		f.Add([]byte(d))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := parseTOML("/f.toml", data)
		checkConfigErr(t, err, "/f.toml", data)
		if (doc == nil) == (err == nil) {
			t.Fatalf("parseTOML = %v, %v: want exactly one of them", doc, err)
		}
		if errors.Is(err, ErrLimit) {
			return // go-toml has no limits to compare with
		}
		var want map[string]any
		werr := toml.Unmarshal(data, &want)
		if versionSkew(data, werr, err) {
			return
		}
		switch {
		case werr == nil && err != nil:
			t.Fatalf("parseTOML(%q) = %v, but go-toml accepts it", data, err)
		case werr != nil && err == nil:
			t.Fatalf("parseTOML(%q) accepts what go-toml refuses: %v", data, werr)
		case werr == nil:
			if !assert.Equal(t, plainTOML(want), plainTOML(doc.root)) {
				t.Fatalf("parseTOML(%q) and go-toml disagree", data)
			}
		}
	})
}

// FuzzTOMLShapes builds deep and wide documents (see tomlShape): each is
// read, and refused with ErrLimit exactly when it passes a limit.
func FuzzTOMLShapes(f *testing.F) {
	for kind := range byte(8) {
		f.Add(kind, uint32(10))
		f.Add(kind, uint32(maxTOMLDepth))
		f.Add(kind, uint32(maxTOMLDepth+1))
	}
	f.Add(byte(6), uint32(maxTOMLEntries))
	f.Fuzz(func(t *testing.T, kind byte, n uint32) {
		n %= maxTOMLEntries + 2
		if kind%8 < 4 {
			n %= 4096 // depths: far past the limit is no different
		}
		data := []byte(tomlShape(kind, int(n)))
		doc, err := parseTOML("/f.toml", data)
		checkConfigErr(t, err, "/f.toml", data)
		if over := tomlShapeOverLimit(kind, int(n)); over != errors.Is(err, ErrLimit) || (err == nil) == (doc == nil) || !over && err != nil {
			t.Fatalf("shape %d of %d: over the limit %v, parseTOML = %v, %v", kind%8, n, over, doc != nil, err)
		}
	})
}
