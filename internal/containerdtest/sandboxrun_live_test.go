package containerdtest_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sandboxpin/sandboxpin/internal/containerdtest"
	"github.com/sandboxpin/sandboxpin/internal/critesttest"
	"github.com/sandboxpin/sandboxpin/internal/runtimetest"
)

// runSpellings are the spellings of TestLiveSandboxRun: the sandbox image
// written in full, and two spellings of the same stored image that are not
// (a short Docker Hub name, a tagless name).
var runSpellings = []string{"exact", "short", "tagless"}

// errNoSandboxImage is how containerd 2.3.0-beta.0 to 2.3.3 fail a pod whose
// sandbox image is not written in full: the podsandbox controller's Start
// looks the image up by the name as configured (`c.client.GetImage(ctx,
// sandboxImage)` in internal/cri/server/podsandbox/sandbox_run.go at v2.3.3,
// from containerd#12849), while the image is stored under its normalized
// name. 2.3.4 (containerd#13759) and 2.4.0-beta.0 (containerd#13513)
// normalize with ParseDockerRef first.
const errNoSandboxImage = "failed to get sandbox image"

// sandboxRuns are what RunPodSandbox does, per build and spelling, as
// observed live: "" if the pod starts, else a part of the error.
var sandboxRuns = []struct {
	version  containerdtest.Version
	spelling string // a name in spellings
	wantErr  string // part of RunPodSandbox's error; "" if the pod starts
}{
	{version: containerdtest.V233, spelling: "exact"},
	{version: containerdtest.V233, spelling: "short", wantErr: errNoSandboxImage},
	{version: containerdtest.V233, spelling: "tagless", wantErr: errNoSandboxImage},
	{version: containerdtest.V23, spelling: "exact"},
	{version: containerdtest.V23, spelling: "short"},
	{version: containerdtest.V23, spelling: "tagless"},
	{version: containerdtest.V24, spelling: "exact"},
	{version: containerdtest.V24, spelling: "short"},
	{version: containerdtest.V24, spelling: "tagless"},
}

// TestLiveSandboxRun starts one pod sandbox over CRI, on a CNI bridge in
// network and mount namespaces of the test's own, on containerd 2.3.3,
// 2.3.7 and 2.4.2, each configured with the sandbox image written in full
// and not, the image imported beforehand (nothing is pulled): 2.3.3 fails
// the spellings not in full (issue 40), the others start every pod. It logs
// the table for the docs.
func TestLiveSandboxRun(t *testing.T) { //nolint:tparallel // the runs share one CNI bridge and its subnet: one after another
	t.Parallel()
	cni := critesttest.DefaultBinaries().CNIBin
	runtimetest.Require(t, "pods on a CNI bridge", func() (bool, string) {
		for _, bin := range []string{filepath.Join(cni, "bridge"), "unshare", "ip"} {
			if _, err := exec.LookPath(bin); err != nil {
				return false, fmt.Sprintf("%s not found (%v); run `bash scripts/deps.sh` as root (it installs Debian's containernetworking-plugins)", bin, err)
			}
		}
		return true, ""
	})
	for _, r := range sandboxRuns {
		containerdtest.Require(t, r.version)
		runtimetest.Require(t, r.version.String()+" pods", func() (bool, string) {
			if r.version.Shim() == "" {
				return false, fmt.Sprintf("%v: pods need containerd 2.4's containerd-shim-runc-v2; run `bash scripts/deps.sh` as root", r.version)
			}
			return true, ""
		})
	}
	if !critesttest.Isolate(t, 10*time.Minute) {
		return
	}
	pause, err := pauseProgram()
	require.NoError(t, err)
	results := map[string]string{}
	// One after another: the runtimes share the bridge and its subnet.
	for _, r := range sandboxRuns {
		sp := spellingNamed(t, r.spelling)
		configured := sp.configured("")
		t.Run(r.version.String()+"/"+r.spelling, func(t *testing.T) {
			ctrd := containerdtest.Start(t, r.version, containerdtest.Options{
				SandboxImage: configured, RestrictOOMScoreAdj: true,
			})
			require.NoError(t, critesttest.WriteCNI(filepath.Join(ctrd.Dir, "cni"), filepath.Join(ctrd.Dir, "cni-bin"), cni, filepath.Join(ctrd.Dir, "cni-state")))
			ctrd.Import(t, containerdtest.Image{Names: []string{sp.stored}, Executable: pause})
			conn, err := grpc.NewClient(ctrd.Endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
			require.NoError(t, err)
			t.Cleanup(func() { _ = conn.Close() })
			rt := runtimeapi.NewRuntimeServiceClient(conn)
			waitNetwork(t, rt)
			t.Cleanup(func() { containerdtest.RemoveSandboxes(t, rt) })

			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			resp, err := rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{
				Metadata: &runtimeapi.PodSandboxMetadata{Name: "p", Namespace: "default", Uid: "u-" + r.spelling},
				Hostname: "p",
			}})
			got := "started"
			if err != nil {
				got = "`" + sandboxIDs.ReplaceAllString(status.Convert(err).Message(), "…") + "`"
			}
			results[r.version.String()+"/"+r.spelling] = got
			if r.wantErr != "" {
				require.Error(t, err, "RunPodSandbox on %v configured %q, stored %s", r.version, configured, sp.stored)
				assert.Contains(t, err.Error(), r.wantErr, "RunPodSandbox on %v configured %q, stored %s", r.version, configured, sp.stored)
				return
			}
			require.NoError(t, err, "RunPodSandbox on %v configured %q, stored %s", r.version, configured, sp.stored)
			st, err := rt.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: resp.GetPodSandboxId()})
			require.NoError(t, err)
			assert.Equal(t, runtimeapi.PodSandboxState_SANDBOX_READY, st.GetStatus().GetState(), "state of the pod")
			assert.NotEmpty(t, st.GetStatus().GetNetwork().GetIp(), "the pod's address on the CNI bridge")
		})
	}

	var b strings.Builder
	b.WriteString("| containerd |")
	for _, name := range runSpellings {
		sp := spellingNamed(t, name)
		fmt.Fprintf(&b, " `%s` (stored `%s`) |", sp.configured(""), sp.stored)
	}
	b.WriteString("\n|" + strings.Repeat("---|", len(runSpellings)+1) + "\n")
	for _, v := range []containerdtest.Version{containerdtest.V233, containerdtest.V23, containerdtest.V24} {
		fmt.Fprintf(&b, "| %s |", v.Release())
		for _, name := range runSpellings {
			got, ok := results[v.String()+"/"+name]
			if !ok {
				got = "-"
			}
			fmt.Fprintf(&b, " %s |", got)
		}
		b.WriteByte('\n')
	}
	t.Logf("RunPodSandbox by configured sandbox image:\n%s", b.String())
}

// sandboxIDs are the 64-hex-digit sandbox IDs in an error, different in
// every run.
var sandboxIDs = regexp.MustCompile(`[0-9a-f]{64}`)

// spellingNamed returns the spelling of spellings named name.
func spellingNamed(t *testing.T, name string) spelling {
	t.Helper()
	for _, sp := range spellings {
		if sp.name == name {
			return sp
		}
	}
	t.Fatalf("no spelling %q", name)
	return spelling{}
}

// waitNetwork waits until the runtime reports its network ready: it has
// read the CNI config written after it started.
func waitNetwork(t *testing.T, rt runtimeapi.RuntimeServiceClient) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for {
		st, err := rt.Status(ctx, &runtimeapi.StatusRequest{})
		require.NoError(t, err)
		for _, c := range st.GetStatus().GetConditions() {
			if c.GetType() == runtimeapi.NetworkReady && c.GetStatus() {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the network is not ready: %v", st.GetStatus().GetConditions())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// pauseProgram is a static program that waits for SIGTERM or SIGINT, as the
// pause image's /pause does, built once per test binary.
var pauseProgram = sync.OnceValues(func() ([]byte, error) {
	dir, err := binDir()
	if err != nil {
		return nil, err
	}
	return containerdtest.BuildPause(dir)
})
