package nodefs

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestShorten(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want string
	}{
		{"short", "short"},
		{strings.Repeat("x", MaxMessage), strings.Repeat("x", MaxMessage)},
		{strings.Repeat("a", 200) + strings.Repeat("b", 200), strings.Repeat("a", 160) + "…(160 bytes left out)…" + strings.Repeat("b", 80)},
		{strings.Repeat("é", 200), strings.Repeat("é", 80) + "…(160 bytes left out)…" + strings.Repeat("é", 40)},
	}
	for _, tt := range tests {
		got := Shorten(tt.in)
		assert.Equal(t, tt.want, got)
	}
}
