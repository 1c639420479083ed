package resolve

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestResultErr checks the one explanation of a missing sandbox image,
// which Resolve and audit.Judge both return.
func TestResultErr(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		res     *Result
		wantErr string // "" for nil
	}{
		{name: "nil", res: nil, wantErr: "resolve: the sandbox image cannot be told: no result"},
		{name: "sandbox image", res: &Result{SandboxImage: "registry.k8s.io/pause:3.10"}},
		{name: "no note", res: &Result{}, wantErr: "resolve: the sandbox image cannot be told: no source names it"},
		{name: "the note says why", res: &Result{Notes: []Note{{Kind: KindVersionSource, Message: "other"}, {Kind: KindNoRuntime, Message: "no container runtime found"}}},
			wantErr: "resolve: the sandbox image cannot be told: no container runtime found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.res.Err()
			if tt.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, ErrNoSandboxImage)
			assert.EqualError(t, err, tt.wantErr)
		})
	}
}
