package crilive

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sandboxpin/sandboxpin/criinfo"
	"github.com/sandboxpin/sandboxpin/criinfo/cri"
	"github.com/sandboxpin/sandboxpin/internal/containerdtest"
	"github.com/sandboxpin/sandboxpin/internal/criotest"
)

// startCRIO starts CRI-O configured with pause and dials it.
func startCRIO(t *testing.T, pause string, images ...containerdtest.Image) (*criotest.CRIO, *cri.Client) {
	t.Helper()
	crio := criotest.Start(t, criotest.Options{PauseImage: pause, Images: images})
	return crio, dialLive(t, crio.Endpoint)
}

// TestLiveCRIOInfo reads the live CRI-O's Status: the Info map is a single
// "config" key holding sandboxImage (pause_image as configured, raw) and,
// since 1.33.0, the nested "crio" object that identifies CRI-O. With -update
// it rewrites criinfo/testdata/crio-<version>-*.json.
func TestLiveCRIOInfo(t *testing.T) {
	t.Parallel()
	for _, configured := range []string{"registry.k8s.io/pause:3.10.1", "REGISTRY.K8S.IO/pause:3.10.1"} {
		t.Run(configured, func(t *testing.T) {
			t.Parallel()
			crio, c := startCRIO(t, configured, containerdtest.Image{Names: []string{"registry.k8s.io/pause:3.10.1"}})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()

			info, err := c.Info(ctx)
			require.NoError(t, err)
			t.Logf("CRI-O Info = %+v", info)
			assert.Equal(t, criinfo.Info{Runtime: criinfo.RuntimeCRIO, RuntimeVersion: strings.TrimPrefix(criotest.Version, "v"),
				SandboxImage: configured, SandboxImageReported: true}, info)
			q, err := cri.Query(ctx, crio.Socket)
			require.NoError(t, err)
			assert.Equal(t, info, q)

			st, err := rawRuntime(t, crio.Endpoint).Status(ctx, &runtimeapi.StatusRequest{Verbose: true})
			require.NoError(t, err)
			keys := make([]string, 0, len(st.GetInfo()))
			for k := range st.GetInfo() {
				keys = append(keys, k)
			}
			assert.Equal(t, []string{"config"}, keys, "CRI-O's Info keys")
			var cfg struct {
				SandboxImage string                     `json:"sandboxImage"`
				CRIO         map[string]json.RawMessage `json:"crio"`
			}
			require.NoError(t, json.Unmarshal([]byte(st.GetInfo()["config"]), &cfg))
			assert.Equal(t, configured, cfg.SandboxImage)
			assert.NotEmpty(t, cfg.CRIO, "config.crio")

			// The pure parser identifies CRI-O from the captures alone, by
			// config.crio.
			st.Info["config"] = sortAnnotations(t, st.GetInfo()["config"])
			raw, crictl := captures(t, st, crio.Dir)
			want := info
			want.RuntimeVersion = ""
			var m map[string]string
			require.NoError(t, json.Unmarshal(raw, &m))
			got, err := criinfo.Parse(m)
			require.NoError(t, err)
			assert.Equal(t, want, got, "criinfo.Parse(capture)")
			got, err = criinfo.ParseJSON(crictl)
			require.NoError(t, err)
			assert.Equal(t, want, got, "criinfo.ParseJSON(capture)")

			if *update && configured == "registry.k8s.io/pause:3.10.1" {
				base := filepath.Join(goldenDir, "crio-"+info.RuntimeVersion)
				require.NoError(t, os.WriteFile(base+"-info.json", crictl, 0o600))
				require.NoError(t, os.WriteFile(base+"-status-info.json", raw, 0o600))
				t.Logf("wrote %s-info.json and %s-status-info.json", base, base)
			}
		})
	}
}

// sortAnnotations sorts every "…Annotations" list (Allowed, Disallowed) in CRI-O's config
// value, which CRI-O fills from a map in random order, so that captures are
// the same from run to run. The value is re-encoded from a generic decode, so
// object keys come out sorted (CRI-O writes config.crio in field order).
func sortAnnotations(t *testing.T, config string) string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(config))
	dec.UseNumber()
	var v any
	require.NoError(t, dec.Decode(&v))
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				if list, ok := e.([]any); ok && strings.HasSuffix(k, "Annotations") {
					slices.SortFunc(list, func(a, b any) int { return strings.Compare(a.(string), b.(string)) })
				}
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(v)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	require.NoError(t, enc.Encode(v))
	return strings.TrimSuffix(b.String(), "\n")
}
