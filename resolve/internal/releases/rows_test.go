package releases

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDefaultImage checks rows at the tags their Read names, and at the
// edges of their ranges.
func TestDefaultImage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		component string // runtime, or "kubelet"
		version   string // as the component reports it
		want      string // built-in sandbox image; "" for ErrUnknownVersion
	}{
		{CRIO, "1.16.0-rc1", "k8s.gcr.io/pause:3.1"},
		{CRIO, "1.18.0-rc1", "k8s.gcr.io/pause:3.1"}, // the bump to 3.2 came after this tag
		{CRIO, "1.18.0", "k8s.gcr.io/pause:3.2"},
		{CRIO, "1.20.9", "k8s.gcr.io/pause:3.2"},
		{CRIO, "1.27.0", "registry.k8s.io/pause:3.6"},
		{CRIO, "1.27.1", "registry.k8s.io/pause:3.9"},
		{CRIO, "1.29.0", "registry.k8s.io/pause:3.9"},
		{CRIO, "1.33.13", "registry.k8s.io/pause:3.10"},
		{CRIO, "1.34.0", "registry.k8s.io/pause:3.10.1"},
		{CRIO, "1.36.3", "registry.k8s.io/pause:3.10.1"},
		{CRIO, "1.37.0", "registry.k8s.io/pause:3.10.1"}, // release-1.37 at 65f5ee4679
		{CRIO, "1.38.0", ""},
		{CRIO, "1.15.4", ""},
		{Containerd, "2.2.10", "registry.k8s.io/pause:3.10.1"},
		{Containerd, "2.4.2", "registry.k8s.io/pause:3.10.2"},
	}
	for _, tt := range tests {
		t.Run(tt.component+"@"+tt.version, func(t *testing.T) {
			t.Parallel()
			v, err := ParseVersion(tt.version)
			require.NoError(t, err)
			got, err := DefaultImage(tt.component, v)
			if tt.want == "" {
				assert.ErrorIs(t, err, ErrUnknownVersion, "DefaultImage(%q, %s)", tt.component, v)
				return
			}
			require.NoError(t, err, "DefaultImage(%q, %s)", tt.component, v)
			assert.Equal(t, tt.want, got.Value, "DefaultImage(%q, %s)", tt.component, v)
		})
	}
}

// TestBranchReadsSayNoTag checks that a row read at a release branch, not
// at a tag, says so, until it is read again at a tag.
func TestBranchReadsSayNoTag(t *testing.T) {
	t.Parallel()
	for name, rows := range allRows() {
		for i, r := range rows {
			if strings.Contains(r.Read, "on branch ") {
				assert.Contains(t, r.Read, "not at a tag", "%s row %d (%s %s)", name, i, r.Component, r.Range)
			}
		}
	}
}
