package config

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPinnedListEntries(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		values  []string // one per occurrence of the flag
		want    []string // entries
		wantErr bool
	}{
		{name: "none", values: nil, want: nil},
		{name: "repeated", values: []string{"nginx", "redis:7"}, want: []string{"nginx", "redis:7"}},
		{name: "comma-separated", values: []string{"nginx,redis:7"}, want: []string{"nginx", "redis:7"}},
		{name: "both", values: []string{"nginx,redis:7", "quay.io/*"}, want: []string{"nginx", "redis:7", "quay.io/*"}},
		{name: "empty value", values: []string{""}, want: nil},
		{name: "spaces kept for Compile to trim", values: []string{"a, b"}, want: []string{"a", " b"}},
		{name: "quoted comma", values: []string{`"tier=a,b",pin`}, want: []string{"tier=a,b", "pin"}},
		{name: "bare quote", values: []string{`a"b`}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := PinnedListEntries(tt.values)
			if tt.wantErr {
				assert.Error(t, err)
				assert.Nil(t, got)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got, "PinnedListEntries(%q)", tt.values)
		})
	}
}
