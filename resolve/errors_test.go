package resolve

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/resolve/internal/nodefs"
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

// TestConfigErrorIsResolves checks that a malformed node file is a
// ConfigError of package resolve itself (go doc shows its fields), from every
// function that reads node files, and that a wrapped one is found too.
func TestConfigErrorIsResolves(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "github.com/sandboxpin/sandboxpin/resolve", reflect.TypeFor[ConfigError]().PkgPath())
	badTOML := fstest.MapFS{"etc/containerd/config.toml": {Data: []byte("version = 2\n[plugins\n")}}
	badUnit := fstest.MapFS{"etc/default/kubelet": {Data: []byte("KUBELET_EXTRA_ARGS=\"unterminated\n")}}
	tests := []struct {
		name     string
		call     func() error
		wantPath string
	}{
		{name: "Resolve", call: func() error {
			_, err := Resolve(context.Background(), Options{Root: badTOML})
			return err
		}, wantPath: "/etc/containerd/config.toml"},
		{name: "ContainerdEndpoint", call: func() error { _, _, err := ContainerdEndpoint(badTOML); return err }, wantPath: "/etc/containerd/config.toml"},
		{name: "KubeletEndpoint", call: func() error { _, _, err := KubeletEndpoint(badUnit); return err }, wantPath: "/etc/default/kubelet"},
		{name: "wrapped", call: func() error {
			return exportErr(fmt.Errorf("outer: %w", nodefs.Invalid("/etc/crio/crio.conf", "crio.image.pause_image", 3, nil)))
		}, wantPath: "/etc/crio/crio.conf"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.call()
			var ce *ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, tt.wantPath, ce.Path)
			assert.ErrorIs(t, err, ErrInvalidConfig)
			assert.True(t, strings.HasPrefix(err.Error(), tt.wantPath) || strings.HasPrefix(err.Error(), "outer: "+tt.wantPath), err.Error())
		})
	}
}
