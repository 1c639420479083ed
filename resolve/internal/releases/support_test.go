package releases

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSupportEnds checks that every support row's Value parses.
func TestSupportEnds(t *testing.T) {
	t.Parallel()
	for _, r := range supportEnds {
		_, err := parseEnd(r.Value)
		assert.NoError(t, err, "%s %s", r.Component, r.Range)
	}
	for _, r := range kubernetesSupport {
		assert.Contains(t, []string{"supported", "unsupported"}, r.Value, "%s %s", r.Component, r.Range)
	}
}

func TestEndOfLife(t *testing.T) {
	t.Parallel()
	tests := []struct {
		component string // component looked up
		version   string // a release of it
		want      string // last supported day, YYYY-MM-DD; "" when not known
	}{
		{Containerd, "1.6.39", "2025-08-23"},
		{Containerd, "1.7.35", "2026-09-30"}, // "September 2026": through the month
		{Containerd, "2.0.0", "2027-03-31"},  // "March, 2027"
		{Containerd, "2.1.4", "2026-07-03"},
		{Containerd, "2.2.10", "2026-11-06"},
		{Containerd, "2.3.0-beta.0", "2028-04-30"},
		{Containerd, "2.3.7", "2028-04-30"},
		{Containerd, "2.4.2", "2027-05-16"},
		{Containerd, "2.5.0", ""},
		{Containerd, "1.4.13", ""},
		{CRIO, "1.36.3", ""},
		{Kubernetes, "1.37.2", ""}, // see KubernetesSupported
	}
	for _, tt := range tests {
		t.Run(tt.component+"@"+tt.version, func(t *testing.T) {
			t.Parallel()
			v, err := ParseVersion(tt.version)
			require.NoError(t, err)
			end, r, err := EndOfLife(tt.component, v)
			if tt.want == "" {
				assert.ErrorIs(t, err, ErrUnknownVersion, "EndOfLife(%q, %s) = %s", tt.component, v, end)
				return
			}
			require.NoError(t, err, "EndOfLife(%q, %s)", tt.component, v)
			assert.Equal(t, tt.want, end.Format(time.DateOnly), "EndOfLife(%q, %s)", tt.component, v)
			assert.Contains(t, r.Read, "@v2.4.2")
		})
	}
}

func TestKubernetesSupported(t *testing.T) {
	t.Parallel()
	tests := []struct {
		version string // a Kubernetes release
		want    bool   // whether it is one of the three newest minors
		wantErr error  // sentinel, or nil
	}{
		{"1.34.9", false, nil},
		{"1.35.0", true, nil},
		{"1.36.3", true, nil},
		{"1.37.2", true, nil},
		{"1.23.17", false, nil},
		{"1.38.0-beta.0", false, ErrUnknownVersion},
	}
	for _, tt := range tests {
		t.Run(tt.version, func(t *testing.T) {
			t.Parallel()
			v, err := ParseVersion(tt.version)
			require.NoError(t, err)
			got, r, err := KubernetesSupported(v)
			assert.ErrorIs(t, err, tt.wantErr, "KubernetesSupported(%s)", v)
			assert.Equal(t, tt.want, got, "KubernetesSupported(%s)", v)
			if err == nil {
				assert.Contains(t, r.Read, "v1.37.2")
			}
		})
	}
}
