package containerdtest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sandboxpin/sandboxpin/criinfo"
	"github.com/sandboxpin/sandboxpin/internal/containerdtest"
	"github.com/sandboxpin/sandboxpin/internal/kubeadmtest"
	"github.com/sandboxpin/sandboxpin/resolve"
)

// statusBuilds are the builds TestLiveStatusSandboxImage compares, and
// whether each reports config.sandboxImage: stock 2.4.2 does not
// (internal/cri/server/status.go, v2.4.2, marshals only the runtime
// config, which holds no sandbox image since 2.0 moved it to the image
// service's pinned_images.sandbox); contrib/containerd/status.patch adds
// it, alone and on top of pin.patch.
var statusBuilds = []struct {
	v        containerdtest.Version
	reported bool
}{
	{containerdtest.V24, false},
	{containerdtest.V24Status, true},
	{containerdtest.V24PinStatus, true},
}

// statusCases are the runtime's sandbox image against kubeadm v1.37.2's
// own, registry.k8s.io/pause:3.10.2 (cmd/kubeadm/app/constants/constants.go,
// PauseVersion, v1.37.2), which is also containerd 2.4.2's default
// (internal/cri/config/config.go, DefaultSandboxImage, v2.4.2).
var statusCases = []struct {
	name       string
	configured string // pinned_images.sandbox
	differs    bool   // from kubeadm's pause image
}{
	{name: "different", configured: "registry.k8s.io/pause:3.10", differs: true},
	{name: "same", configured: "registry.k8s.io/pause:3.10.2"},
}

// criLive is resolve's LiveRuntime over a CRI socket, answered as
// criinfo/cri's Client.Info answers it (Version, then Status with Verbose,
// parsed with criinfo.Parse) without that module, which this one does not
// require.
type criLive struct{ endpoint string }

func (l criLive) Info(ctx context.Context) (criinfo.Info, error) {
	conn, err := grpc.DialContext(ctx, l.endpoint, grpc.WithTransportCredentials(insecure.NewCredentials())) //nolint:staticcheck // SA1019: NewClient needs grpc 1.63, above this module's floor
	if err != nil {
		return criinfo.Info{}, err
	}
	defer conn.Close()
	rt := runtimeapi.NewRuntimeServiceClient(conn)
	v, err := rt.Version(ctx, &runtimeapi.VersionRequest{})
	if err != nil {
		return criinfo.Info{}, err
	}
	st, err := rt.Status(ctx, &runtimeapi.StatusRequest{Verbose: true})
	if err != nil {
		return criinfo.Info{}, err
	}
	info, err := criinfo.Parse(st.GetInfo())
	if err != nil {
		return criinfo.Info{}, err
	}
	info.Runtime = criinfo.Runtime(v.GetRuntimeName())
	info.RuntimeVersion = v.GetRuntimeVersion()
	return info, nil
}

// crictlSandboxImage runs `crictl info -o json` against endpoint and
// returns its config.sandboxImage, and whether there is one.
func crictlSandboxImage(t *testing.T, crictl, endpoint string) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, crictl, "--runtime-endpoint", endpoint, "--image-endpoint", endpoint, "--timeout", "20s", "info", "-o", "json")
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir()) // no user crictl.yaml
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "crictl info: %s", stderr.String())
	var doc struct {
		Config map[string]json.RawMessage `json:"config"`
	}
	require.NoError(t, json.Unmarshal(out, &doc), "crictl info -o json:\n%s", out)
	require.NotEmpty(t, doc.Config, "crictl info has a config:\n%s", out)
	raw, ok := doc.Config["sandboxImage"]
	if !ok {
		return "", false
	}
	var img string
	require.NoError(t, json.Unmarshal(raw, &img), "config.sandboxImage")
	return img, true
}

// TestLiveStatusSandboxImage runs containerd 2.4.2, the same with
// contrib/containerd/status.patch, and with pin.patch and status.patch,
// each configured with a sandbox image other than kubeadm's and with the
// same, every image kubeadm lists already stored, and asks each three
// clients: crictl info (config.sandboxImage), resolve.Resolve on an empty
// node root (no config file to read) with the live runtime, and stock
// kubeadm v1.37.2's pre-flight. Stock reports nothing: crictl finds no
// config.sandboxImage, resolve falls back to the release's default
// (wrong for the different image), and kubeadm cannot see the difference.
// Patched reports the configured image: resolve answers from the
// runtime's report (source runtime-info) and kubeadm warns exactly for the
// different image.
func TestLiveStatusSandboxImage(t *testing.T) { //nolint:tparallel // the runs are parallel inside "runs", which must end before the table
	kubeadmtest.Require(t)
	crictl := containerdtest.Crictl(t)
	t.Parallel()
	_, kversion := kubeadmtest.Binary()
	kubeadmImages := kubeadmtest.ImagesList(t, kubeadmtest.Config{KubernetesVersion: kversion})
	kubeadmPause := kubeadmtest.PauseImage(kubeadmImages)
	require.Equal(t, "registry.k8s.io/pause:3.10.2", kubeadmPause, "kubeadm %s's pause image", kversion)
	// containerd 2.4.2's built-in sandbox image, as resolve knows it.
	defaultImage, err := resolve.RuntimeDefaultImage("containerd", "2.4.2")
	require.NoError(t, err)

	var mu sync.Mutex
	rows := map[string]string{}
	t.Run("runs", func(t *testing.T) {
		for _, b := range statusBuilds {
			for _, sc := range statusCases {
				t.Run(b.v.String()+"/"+sc.name, func(t *testing.T) {
					t.Parallel()
					c := containerdtest.Start(t, b.v, containerdtest.Options{
						SandboxImage: sc.configured,
						Images:       []containerdtest.Image{{Names: append([]string{sc.configured}, kubeadmImages...)}},
					})

					// (a) what crictl info says
					img, ok := crictlSandboxImage(t, crictl, c.Endpoint)
					assert.Equal(t, b.reported, ok, "crictl info has config.sandboxImage")
					if b.reported {
						assert.Equal(t, sc.configured, img, "crictl info's config.sandboxImage")
					}
					crictlCell := "(absent)"
					if ok {
						crictlCell = "`" + img + "`"
					}

					// (b) what resolve answers with no config file to read
					ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
					defer cancel()
					res, err := resolve.Resolve(ctx, resolve.Options{Root: resolve.DirFS(t.TempDir()), Live: criLive{c.Endpoint}})
					require.NoError(t, err)
					wantImage, wantSource := defaultImage, resolve.SourceRuntimeDefault
					if b.reported {
						wantImage, wantSource = sc.configured, resolve.SourceRuntimeInfo
					}
					assert.Equal(t, "containerd", string(res.Runtime))
					assert.Equal(t, wantImage, res.SandboxImage, "resolve's sandbox image; winner %+v", res.Winner)
					assert.Equal(t, wantSource, res.Winner.Source, "resolve's source; winner %+v", res.Winner)
					resolveCell := fmt.Sprintf("`%s` (%s)", res.SandboxImage, res.Winner.Source)

					// (c) what stock kubeadm's pre-flight says, at -v=4 to
					// see why it is silent
					r := kubeadmtest.Preflight(t, kubeadmtest.Config{KubernetesVersion: kversion, CRISocket: c.Endpoint, Verbosity: 4})
					require.NoError(t, r.Err, "kubeadm init phase preflight\nstdout:\n%s\nstderr:\n%s", r.Stdout, r.Stderr)
					assert.False(t, r.Pulled, "kubeadm pulled an image:\n%s", r.Stderr)
					assert.Equal(t, !b.reported, strings.Contains(r.Stderr, "no 'sandboxImage' field in CRI info config"),
						"kubeadm finds no sandbox image in the runtime's report exactly on stock:\n%s", r.Stderr)
					assert.Equal(t, b.reported && sc.differs, r.SandboxWarning != "", "kubeadm's sandbox warning: %q", r.SandboxWarning)
					kubeadmCell := "silent"
					if r.SandboxWarning != "" {
						assert.Equal(t, sc.configured, r.RuntimeSandbox, "kubeadm names the runtime's image")
						assert.Equal(t, kubeadmPause, r.KubeadmSandbox, "kubeadm names its own")
						kubeadmCell = fmt.Sprintf("warns (runtime `%s`, kubeadm `%s`)", r.RuntimeSandbox, r.KubeadmSandbox)
					} else if !b.reported {
						kubeadmCell = "silent (blind: \"no 'sandboxImage' field in CRI info config\" at -v=4)"
					}

					mu.Lock()
					rows[b.v.String()+"/"+sc.name] = fmt.Sprintf("| %s | `%s` | %s | %s | %s |", b.v, sc.configured, crictlCell, resolveCell, kubeadmCell)
					mu.Unlock()
				})
			}
		}
	})
	var out strings.Builder
	out.WriteString("| containerd 2.4.2 | pinned_images.sandbox | crictl info: config.sandboxImage | resolve.Resolve, empty root + live runtime | kubeadm v1.37.2 pre-flight (its pause image `" + kubeadmPause + "`) |\n|---|---|---|---|---|\n")
	for _, sc := range statusCases {
		for _, b := range statusBuilds {
			fmt.Fprintln(&out, rows[b.v.String()+"/"+sc.name])
		}
	}
	t.Logf("the sandbox image over CRI Status, stock against status.patch:\n%s", out.String())
}
