package crilive

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protojson"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sandboxpin/sandboxpin/criinfo"
	"github.com/sandboxpin/sandboxpin/criinfo/cri"
	"github.com/sandboxpin/sandboxpin/internal/containerdtest"
)

// update rewrites the golden files in criinfo/testdata from the live runtimes:
//
//	go test ./criinfo/cri -run TestLive -update
var update = flag.Bool("update", false, "rewrite criinfo/testdata/containerd-*.json (1.6.20, 1.7.35, 2.2.9, 2.3.7, 2.4.2) and crio-*.json from the live runtimes")

// goldenDir is where the captures go, beside the parser that reads them.
const goldenDir = "../../criinfo/testdata"

// goldenRoot replaces the temporary directory in captures, so that
// regenerating them gives the same bytes.
const goldenRoot = "/tmp/sbp-golden"

// Images every live runtime gets besides its sandbox image.
var liveExtraImages = []containerdtest.Image{
	{Names: []string{"docker.io/library/busybox:1.36"}},
	{Names: []string{"registry.k8s.io/coredns/coredns:v1.11.1"}},
}

// liveCases are the runtimes and configurations the live tests run against.
var liveCases = []struct {
	name       string
	version    containerdtest.Version
	configured string // sandbox image in the config file
	stored     string // name the pause image is imported under
	// Observed facts, asserted so that a change in a runtime shows up here.
	wantVersion  string // RuntimeVersion prefix
	wantReported bool   // the runtime reports its sandbox image in Status Info
	wantPinned   bool   // the runtime pins the stored pause image itself
	golden       bool   // capture the Status Info as a golden file
}{
	{
		name: "containerd-1.6", version: containerdtest.V1,
		configured: "registry.k8s.io/pause:3.10.1", stored: "registry.k8s.io/pause:3.10.1",
		wantVersion: "1.6.", wantReported: true, wantPinned: false, golden: true,
	},
	{
		name: "containerd-2.2", version: containerdtest.V2,
		configured: "registry.k8s.io/pause:3.10.1", stored: "registry.k8s.io/pause:3.10.1",
		wantVersion: "2.2.", wantReported: false, wantPinned: true, golden: true,
	},
	{
		name: "containerd-1.7", version: containerdtest.V17,
		configured: "registry.k8s.io/pause:3.10.1", stored: "registry.k8s.io/pause:3.10.1",
		wantVersion: "1.7.", wantReported: true, wantPinned: true, golden: true,
	},
	{
		name: "containerd-2.3", version: containerdtest.V23,
		configured: "registry.k8s.io/pause:3.10.1", stored: "registry.k8s.io/pause:3.10.1",
		wantVersion: "2.3.", wantReported: false, wantPinned: true, golden: true,
	},
	{
		name: "containerd-2.4", version: containerdtest.V24,
		configured: "registry.k8s.io/pause:3.10.1", stored: "registry.k8s.io/pause:3.10.1",
		wantVersion: "2.4.", wantReported: false, wantPinned: true, golden: true,
	},
	{
		name: "containerd-2.2-alias", version: containerdtest.V2,
		configured: "k8s.gcr.io/pause:3.10.1", stored: "registry.k8s.io/pause:3.10.1",
		wantVersion: "2.2.", wantReported: false, wantPinned: false,
	},
}

// startLive starts the runtime of a live case and dials it.
func startLive(t *testing.T, v containerdtest.Version, configured, stored string) (*containerdtest.Containerd, *cri.Client) {
	t.Helper()
	images := append([]containerdtest.Image{{Names: []string{stored}}}, liveExtraImages...)
	ctrd := containerdtest.Start(t, v, containerdtest.Options{SandboxImage: configured, Images: images})
	return ctrd, dialLive(t, ctrd.Endpoint)
}

// dialLive dials a live runtime's endpoint, closing the client at cleanup.
// rawRuntime returns a CRI client of endpoint for the raw answers, which
// cri.Client does not hand out.
func rawRuntime(t *testing.T, endpoint string) runtimeapi.RuntimeServiceClient {
	t.Helper()
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return runtimeapi.NewRuntimeServiceClient(conn)
}

func dialLive(t *testing.T, endpoint string) *cri.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := cri.Dial(ctx, endpoint)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestLiveInfo(t *testing.T) {
	t.Parallel()
	for _, tc := range liveCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctrd, c := startLive(t, tc.version, tc.configured, tc.stored)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()

			info, err := c.Info(ctx)
			require.NoError(t, err)
			t.Logf("%s %s: Info = %+v", tc.name, info.RuntimeVersion, info)
			assert.Equal(t, criinfo.RuntimeContainerd, info.Runtime)
			assert.True(t, strings.HasPrefix(info.RuntimeVersion, tc.wantVersion), "RuntimeVersion = %q, want %s*", info.RuntimeVersion, tc.wantVersion)
			assert.Equal(t, tc.wantReported, info.SandboxImageReported, "SandboxImageReported")
			if tc.wantReported {
				assert.Equal(t, tc.configured, info.SandboxImage)
			} else {
				assert.Empty(t, info.SandboxImage)
			}
			assert.Equal(t, ctrd.Socket, info.ContainerdEndpoint)

			// Query, the one-shot, agrees, with either endpoint spelling.
			for _, ep := range []string{ctrd.Endpoint, ctrd.Socket} {
				q, err := cri.Query(ctx, ep)
				require.NoError(t, err)
				assert.Equal(t, info, q, "cri.Query(%q)", ep)
			}

			st, err := rawRuntime(t, ctrd.Endpoint).Status(ctx, &runtimeapi.StatusRequest{Verbose: true})
			require.NoError(t, err)
			raw, crictl := captures(t, st, ctrd.Dir)
			// The pure parser reads both captures to the same answer.
			want := info
			want.RuntimeVersion = ""
			want.ContainerdEndpoint = strings.ReplaceAll(want.ContainerdEndpoint, ctrd.Dir, goldenRoot)
			var m map[string]string
			require.NoError(t, json.Unmarshal(raw, &m))
			got, err := criinfo.Parse(m)
			require.NoError(t, err)
			assert.Equal(t, want, got, "criinfo.Parse(capture)")
			got, err = criinfo.ParseJSON(crictl)
			require.NoError(t, err)
			assert.Equal(t, want, got, "criinfo.ParseJSON(capture)")

			if tc.golden && *update {
				ver := info.RuntimeVersion
				if i := strings.IndexAny(ver, "~+-"); i >= 0 {
					ver = ver[:i]
				}
				base := filepath.Join(goldenDir, "containerd-"+ver)
				require.NoError(t, os.WriteFile(base+"-info.json", crictl, 0o600))
				require.NoError(t, os.WriteFile(base+"-status-info.json", raw, 0o600))
				t.Logf("wrote %s-info.json and %s-status-info.json", base, base)
			}
		})
	}
}

// captures returns the Status Info map as JSON (map[string]string) and the
// document `crictl info` would print for st, with dir replaced by goldenRoot.
// The crictl shape follows cri-tools' outputStatusData: "status" from
// protojson, "runtimeHandlers" and "features" from encoding/json, and each
// Info value embedded as JSON when it parses, as a string otherwise.
func captures(t *testing.T, st *runtimeapi.StatusResponse, dir string) (raw, crictl []byte) {
	t.Helper()
	info := map[string]string{}
	for k, v := range st.GetInfo() {
		info[k] = strings.ReplaceAll(v, dir, goldenRoot)
	}
	raw, err := json.MarshalIndent(info, "", "  ")
	require.NoError(t, err)

	doc := map[string]any{}
	statusJSON, err := protojson.MarshalOptions{EmitDefaultValues: true}.Marshal(st.GetStatus())
	require.NoError(t, err)
	var status any
	require.NoError(t, json.Unmarshal([]byte(strings.ReplaceAll(string(statusJSON), dir, goldenRoot)), &status))
	doc["status"] = status
	if hs := st.GetRuntimeHandlers(); hs != nil {
		b, err := json.Marshal(hs)
		require.NoError(t, err)
		var v any
		require.NoError(t, json.Unmarshal(b, &v))
		doc["runtimeHandlers"] = v
	}
	if f := st.GetFeatures(); f != nil {
		b, err := json.Marshal(f)
		require.NoError(t, err)
		var v any
		require.NoError(t, json.Unmarshal(b, &v))
		doc["features"] = v
	}
	for k, v := range info {
		var decoded any
		if json.Unmarshal([]byte(v), &decoded) == nil {
			doc[k] = decoded
		} else {
			doc[k] = v
		}
	}
	crictl, err = json.MarshalIndent(doc, "", "  ")
	require.NoError(t, err)
	return append(raw, '\n'), append(crictl, '\n')
}

func TestLiveImages(t *testing.T) {
	t.Parallel()
	for _, tc := range liveCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, c := startLive(t, tc.version, tc.configured, tc.stored)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			imgs, err := c.Images(ctx)
			require.NoError(t, err)

			var tags []string
			pinned := map[string]bool{}
			for _, img := range imgs {
				tags = append(tags, img.GetRepoTags()...)
				for _, tag := range img.GetRepoTags() {
					pinned[tag] = img.GetPinned()
				}
				assert.True(t, strings.HasPrefix(img.GetId(), "sha256:"), "Id = %q", img.GetId())
			}
			slices.Sort(tags)
			assert.Equal(t, []string{
				"docker.io/library/busybox:1.36",
				"registry.k8s.io/coredns/coredns:v1.11.1",
				"registry.k8s.io/pause:3.10.1",
			}, tags)
			t.Logf("%s configured %q: runtime's own pinned flags: %v", tc.name, tc.configured, pinned)
			for tag, p := range pinned {
				want := tag == tc.stored && tc.wantPinned
				assert.Equal(t, want, p, "runtime's own Pinned for %s", tag)
			}
		})
	}
}
