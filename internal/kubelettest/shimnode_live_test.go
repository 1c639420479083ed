package kubelettest_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/internal/containerdtest"
	"github.com/sandboxpin/sandboxpin/internal/kubelettest"
	"github.com/sandboxpin/sandboxpin/internal/runtimetest"
)

// shimProcess is `sandboxpin shim` run with the ExecStart line of
// deploy/systemd/sandboxpin-shim.service, its metrics on a free loopback
// port. A test may SIGKILL it and start it again on the same socket, as
// systemd's Restart=on-failure does.
type shimProcess struct {
	// Endpoint is the shim's socket, "unix://…".
	Endpoint string

	args   []string
	log    *runtimetest.SyncBuffer // the stderr of every run, in turn
	cmd    *exec.Cmd
	exited chan struct{}
	// metrics is the host:port of the running process's /metrics.
	metrics string
}

// shimMetricsAddr is what the shim logs once it serves its metrics.
var shimMetricsAddr = regexp.MustCompile(`msg="serving metrics" addr=(\S+)`)

// shimStartTimeout bounds a start of the shim: it resolves the node and
// asks the runtime for its status first.
const shimStartTimeout = 2 * time.Minute

// startShimProcess starts the shim in front of the runtime at endpoint,
// resolving the sandbox image from the node root and from the live runtime,
// and waits until it serves with rules. t.Cleanup stops it (SIGTERM).
func startShimProcess(t *testing.T, endpoint, root string) *shimProcess {
	t.Helper()
	bin, err := sandboxpinBinary()
	require.NoError(t, err)
	dir, err := os.MkdirTemp("/tmp", "sbs")
	require.NoError(t, err)
	sock := filepath.Join(dir, "shim.sock")
	args, err := shimCommand(bin, "unix://"+sock, endpoint, root, "127.0.0.1:0")
	require.NoError(t, err)
	s := &shimProcess{Endpoint: "unix://" + sock, args: args, log: &runtimetest.SyncBuffer{}}
	t.Cleanup(func() {
		s.stop()
		if t.Failed() {
			t.Logf("crishim log:\n%s", s.log.String())
		}
		_ = os.RemoveAll(dir)
	})
	s.start(t)
	t.Logf("crishim: %s", firstLine(s.log.String(), regexp.MustCompile(`pin rules loaded`)))
	return s
}

// start starts the shim and waits until this run logs that it serves, with
// pin rules and its metrics.
func (s *shimProcess) start(t testing.TB) {
	t.Helper()
	began := len(s.log.String())
	fmt.Fprintf(s.log, "--- %s: start\n", time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(s.args[0], s.args[1:]...)
	cmd.Stderr = s.log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	s.cmd, s.exited = cmd, exited
	deadline := time.Now().Add(shimStartTimeout)
	for {
		run := s.log.String()[began:]
		m := shimMetricsAddr.FindStringSubmatch(run)
		if m != nil && strings.Contains(run, "msg=serving ") && strings.Contains(run, "pin rules loaded") {
			s.metrics = m[1]
			return
		}
		select {
		case <-exited:
			t.Fatalf("crishim exited:\n%s", run)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("crishim did not serve with rules and metrics:\n%s", run)
		}
	}
}

// kill ends the shim with SIGKILL, as a crash would: it removes no socket
// and lets no call finish.
func (s *shimProcess) kill(t testing.TB) {
	t.Helper()
	require.NoError(t, s.cmd.Process.Kill())
	<-s.exited
	fmt.Fprintf(s.log, "--- %s: killed\n", time.Now().Format(time.RFC3339Nano))
}

// stop ends the shim as systemd's stop does (SIGTERM, SIGKILL after 15 s),
// if it runs.
func (s *shimProcess) stop() {
	if s.cmd == nil {
		return
	}
	runtimetest.Terminate(s.cmd.Process, s.exited, 15*time.Second)
}

// scrape returns the running shim's /metrics.
func (s *shimProcess) scrape(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return runtimetest.Get(ctx, http.DefaultClient, "http://"+s.metrics+"/metrics")
}

// call is one CRI method ("/runtime.v1.RuntimeService/ListContainers") and
// the gRPC code a call of it ended with ("OK", "NotFound").
type call struct{ method, code string }

// callCounts reads the calls of the counter metric from an exposition,
// with the labels that name the method (a full path, or the service and
// method names in two labels) and the code.
func callCounts(exposition, metric string, labels func(map[string]string) call) (map[call]float64, error) {
	samples, err := kubelettest.SamplesOf(exposition, metric)
	if err != nil {
		return nil, err
	}
	out := map[call]float64{}
	for _, s := range samples {
		out[labels(s.Labels)] += s.Value
	}
	return out, nil
}

// shimCalls reads sandboxpin_shim_calls_total: the calls the shim carried
// and the code the client got.
func shimCalls(exposition string) (map[call]float64, error) {
	return callCounts(exposition, "sandboxpin_shim_calls_total", func(l map[string]string) call {
		return call{l["method"], l["code"]}
	})
}

// runtimeCalls reads containerd's grpc_server_handled_total: the calls the
// runtime answered, and with what code (go-grpc-prometheus's server
// metrics, which containerd registers on its gRPC server).
func runtimeCalls(exposition string) (map[call]float64, error) {
	return callCounts(exposition, "grpc_server_handled_total", func(l map[string]string) call {
		return call{"/" + l["grpc_service"] + "/" + l["grpc_method"], l["grpc_code"]}
	})
}

// appImage is the image of the pods' containers: not the pause image, so
// that the pause image is no container's and only its pin keeps the
// kubelet's image GC from it.
const appImage = "docker.io/sandboxpin/app:1"

// podNode is containerd 1.6.20 set up to run pods here (restricted
// oom_score_adj, offline) with the pause image (the configured sandbox
// image), appImage and the victim, and a node root holding its config for
// the shim to resolve.
type podNode struct {
	ctrd     *containerdtest.Containerd
	root     string
	pauseID  string
	victimID string
}

// startPodNode starts a podNode; metrics is Options.Metrics.
func startPodNode(t *testing.T, metrics string) *podNode {
	t.Helper()
	pause, err := pauseBinary()
	require.NoError(t, err)
	ctrd := containerdtest.Start(t, containerdtest.V1, containerdtest.Options{
		SandboxImage: storedPause, RestrictOOMScoreAdj: true, Offline: true, Metrics: metrics,
	})
	ids := ctrd.Import(t,
		containerdtest.Image{Names: []string{storedPause}, Executable: pause},
		containerdtest.Image{Names: []string{appImage}, Executable: pause},
		containerdtest.Image{Names: []string{victim}})
	removePodsAtCleanup(t, ctrd.Endpoint)
	root := t.TempDir()
	nodeCfg := filepath.Join(root, "etc", "containerd", "config.toml")
	require.NoError(t, os.MkdirAll(filepath.Dir(nodeCfg), 0o750))
	copyFile(t, filepath.Join(ctrd.Dir, "config.toml"), nodeCfg)
	return &podNode{ctrd: ctrd, root: root, pauseID: ids[0], victimID: ids[2]}
}

// appPod is a hostNetwork static pod named name whose container runs image,
// never pulled.
func appPod(name, image string) string {
	return `apiVersion: v1
kind: Pod
metadata:
  name: ` + name + `
  namespace: default
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: ` + image + `
    imagePullPolicy: Never
`
}
