package resolve

import (
	"fmt"
	"testing"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// BenchmarkParseTOML reads files of 1,000 to 100,000 tables (and keys,
// array elements, arrays of tables): time per op must grow at most 12×
// per 10× input. The go-toml sub-benchmarks are the baseline, the decoder
// used before: toml.Unmarshal plus a pass of the unstable parser for key
// lines, quadratic in the number of tables.
func BenchmarkParseTOML(b *testing.B) {
	shapes := []struct {
		name string
		kind byte // see tomlShape
	}{
		{"tables", 4}, {"keys", 5}, {"elements", 6}, {"arraytables", 7},
	}
	for _, s := range shapes {
		for _, n := range []int{1000, 10_000, 100_000} {
			data := []byte(tomlShape(s.kind, n))
			b.Run(fmt.Sprintf("%s=%d", s.name, n), func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(data)))
				for b.Loop() {
					if _, err := parseTOML("/f.toml", data); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
	for _, n := range []int{1000, 10_000} {
		data := []byte(tomlShape(4, n))
		b.Run(fmt.Sprintf("go-toml/tables=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				var m map[string]any
				if err := toml.Unmarshal(data, &m); err != nil {
					b.Fatal(err)
				}
				var p unstable.Parser
				p.Reset(data)
				for p.NextExpression() {
					for it := p.Expression().Key(); it.Next(); {
						_ = it.Node().Raw.Offset
					}
				}
			}
		})
	}
}

// BenchmarkParseTOMLDefault reads a containerd-sized config, the usual case.
func BenchmarkParseTOMLDefault(b *testing.B) {
	data := []byte(tomlGood[2] + tomlShape(4, 100)[len("version = 2\n"):])
	b.ReportAllocs()
	for b.Loop() {
		if _, err := parseTOML("/f.toml", data); err != nil {
			b.Fatal(err)
		}
	}
}
