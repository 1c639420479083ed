package criinfo

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func BenchmarkParse(b *testing.B) {
	for _, tt := range goldenTests {
		m := readStatusInfo(b, tt.name)
		b.Run(tt.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Parse(m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	hostile := map[string]string{
		"too deep":        strings.Repeat("[", 1<<20),
		"long image":      `{"sandboxImage":"` + strings.Repeat("a", 1<<20) + `"}`,
		"many members":    manyMembers(1 << 16),
		"not json at all": strings.Repeat("x", 1<<20),
	}
	for name, cfg := range hostile {
		m := map[string]string{"config": cfg}
		b.Run("hostile/"+name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = Parse(m)
			}
		})
	}
}

func BenchmarkParseJSON(b *testing.B) {
	for _, tt := range goldenTests {
		data, err := os.ReadFile(filepath.Join("testdata", tt.name+"-info.json"))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(tt.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := ParseJSON(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// manyMembers returns a config object with n distinct members before the
// sandbox image.
func manyMembers(n int) string {
	var sb strings.Builder
	sb.WriteString("{")
	for i := range n {
		fmt.Fprintf(&sb, "%q:%d,", fmt.Sprint("k", i), i)
	}
	sb.WriteString(`"sandboxImage":"p:1"}`)
	return sb.String()
}
