package config

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/resolve/internal/nodetest"
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

func TestReadCRIDockerdPinnedFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		files      map[string]string
		wantImages []string // --pinned-images values, as written
		wantLabels []string // --pinned-image-labels values
		wantLines  []int    // line of each --pinned-images value
	}{
		{
			name:  "none",
			files: map[string]string{unitLib: "[Service]\nExecStart=/usr/bin/cri-dockerd --container-runtime-endpoint fd://\n"},
		},
		{
			name: "both forms, continuation lines",
			files: map[string]string{unitLib: "[Service]\nExecStart=/usr/bin/cri-dockerd \\\n  --pinned-images=pause:3.10,nginx \\\n" +
				"  --pinned-images \"quay.io/team/*\" \\\n  --pinned-image-labels=tier=system\n"},
			wantImages: []string{"pause:3.10,nginx", "quay.io/team/*"}, wantLabels: []string{"tier=system"}, wantLines: []int{3, 4},
		},
		{
			name: "a drop-in's ExecStart replaces the unit's",
			files: map[string]string{
				unitLib: "[Service]\nExecStart=/usr/bin/cri-dockerd --pinned-images=old\n",
				"etc/systemd/system/cri-docker.service.d/10-pins.conf": "[Service]\nExecStart=\nExecStart=/usr/bin/cri-dockerd --pinned-images=new:1\n",
			},
			wantImages: []string{"new:1"}, wantLines: []int{3},
		},
		{
			name:       "after -- is no flag",
			files:      map[string]string{unitLib: "[Service]\nExecStart=/usr/bin/cri-dockerd --pinned-images=a:1 -- --pinned-images=b:1\n"},
			wantImages: []string{"a:1"}, wantLines: []int{2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ReadCRIDockerd(nodetest.MapFS(tt.files))
			require.NoError(t, err)
			require.NotNil(t, got)
			var images, labels []string
			var lines []int
			for _, f := range got.PinnedImages {
				images, lines = append(images, f.Value), append(lines, f.Line)
				assert.Equal(t, "--pinned-images", f.Flag)
				assert.Equal(t, "ExecStart", f.Key)
			}
			for _, f := range got.PinnedImageLabels {
				labels = append(labels, f.Value)
			}
			assert.Equal(t, tt.wantImages, images, "PinnedImages")
			assert.Equal(t, tt.wantLabels, labels, "PinnedImageLabels")
			assert.Equal(t, tt.wantLines, lines, "lines")
		})
	}
}
