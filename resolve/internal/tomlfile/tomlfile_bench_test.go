package tomlfile

import (
	"fmt"
	"testing"
)

// BenchmarkParse reads files of up to MaxEntries tables and keys, and of
// up to 100,000 array elements, with each decoder.
func BenchmarkParse(b *testing.B) {
	shapes := []struct {
		name string
		kind byte // see tomlShape
		ns   []int
	}{
		{"tables", 4, []int{MaxEntries / 10, MaxEntries - 1}},
		{"keys", 5, []int{MaxEntries / 10, MaxEntries - 1}},
		{"elements", 6, []int{1000, 10_000, 100_000}},
		{"arraytables", 7, []int{MaxEntries / 10, MaxEntries - 1}},
	}
	for _, d := range decoders {
		for _, s := range shapes {
			for _, n := range s.ns {
				data := []byte(tomlShape(s.kind, n))
				b.Run(fmt.Sprintf("%s/%s=%d", d.name, s.name, n), func(b *testing.B) {
					b.ReportAllocs()
					b.SetBytes(int64(len(data)))
					for b.Loop() {
						if _, err := Parse(data, d.dec, MaxEntries); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}

// BenchmarkParseDefault reads a containerd-sized config, the usual case.
func BenchmarkParseDefault(b *testing.B) {
	data := []byte(tomlGood[2] + tomlShape(4, 100)[len("version = 2\n"):])
	for _, d := range decoders {
		b.Run(d.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Parse(data, d.dec, MaxEntries); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
