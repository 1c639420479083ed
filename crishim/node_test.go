package crishim

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/criinfo/cri/fakecri"
	"github.com/sandboxpin/sandboxpin/pin"
)

// TestNodeLoaderRules checks sandboxpin_shim_rules against the rules the
// loaded matcher holds: on CRI-O the resolved sandbox image is a Strict
// rule beside the node's pins only when it parses (resolve.Result.Matcher),
// so a pause_image that does not parse adds none.
func TestNodeLoaderRules(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		pause     string // CRI-O's pause_image
		extra     []string
		wantRules int
	}{
		{name: "a reference", pause: "registry.k8s.io/pause:3.10.1", extra: []string{"busybox:1"}, wantRules: 3},
		{name: "not a reference", pause: "registry.k8s.io/Pause:3.10.1", extra: []string{"busybox:1"}, wantRules: 2},
		{name: "no extra", pause: "registry.k8s.io/pause:3.10.1", wantRules: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			conf := filepath.Join(root, "etc", "crio", "crio.conf")
			require.NoError(t, os.MkdirAll(filepath.Dir(conf), 0o750))
			require.NoError(t, os.WriteFile(conf, []byte("[crio.image]\npause_image = \""+tt.pause+"\"\n"), 0o600))
			sock := fakecri.Serve(t, &fakecri.Runtime{RuntimeName: "cri-o", RuntimeVersion: "1.36.3"})
			extra, err := pin.Compile(tt.extra)
			require.NoError(t, err)
			met := newMetrics()
			load := joinLoader(nodeLoader("unix://"+sock, *nodeOptions(root), slog.New(slog.NewTextHandler(io.Discard, nil))), extra, met)
			m, err := load(context.Background())
			require.NoError(t, err)
			assert.Equal(t, tt.wantRules, m.Len(), "rules of the loaded matcher")
			fams, err := met.reg.Gather()
			require.NoError(t, err)
			var got float64 = -1
			for _, f := range fams {
				if f.GetName() == metricRules {
					got = f.GetMetric()[0].GetGauge().GetValue()
				}
			}
			assert.InDelta(t, float64(tt.wantRules), got, 0, metricRules)
		})
	}
}
