package clustertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sandboxpin/sandboxpin/internal/runtimetest"
)

// Versions that scripts/deps.sh builds (CONTROL_PLANE_VERSION,
// PROMETHEUS_OPERATOR_VERSION, KUBE_STATE_METRICS_VERSION and
// PROMETHEUS_VERSION there).
const (
	KubernetesVersion         = "v1.37.2"
	PrometheusOperatorVersion = "v0.85.0"
	KubeStateMetricsVersion   = "v2.20.0"
	PrometheusVersion         = "v0.315.1"
)

// Environment variables that name other builds than the cache's.
const (
	EnvControlPlane       = "SANDBOXPIN_CONTROL_PLANE" // the directory of kube-apiserver, kube-controller-manager, kube-scheduler, kubectl and etcd
	EnvPrometheusOperator = "SANDBOXPIN_PROMETHEUS_OPERATOR"
	EnvKubeStateMetrics   = "SANDBOXPIN_KUBE_STATE_METRICS"
	EnvPrometheus         = "SANDBOXPIN_PROMETHEUS"
	EnvKubeadm            = "SANDBOXPIN_KUBEADM"
	EnvKubelet            = "SANDBOXPIN_KUBELET"
)

// Binaries are the programs a cluster runs.
type Binaries struct {
	Etcd, APIServer, ControllerManager, Scheduler, Kubectl string
	Kubeadm, Kubelet                                       string
	Operator, OperatorCRDs, KubeStateMetrics, Prometheus   string
}

// Find returns the binaries from the environment or the cache, whether or
// not they exist.
func Find() Binaries {
	cache := runtimetest.CacheDir()
	env := func(name, def string) string {
		if v := os.Getenv(name); v != "" {
			return v
		}
		return def
	}
	cp := env(EnvControlPlane, filepath.Join(cache, "control-plane", KubernetesVersion))
	op := env(EnvPrometheusOperator, filepath.Join(cache, "prometheus-operator", PrometheusOperatorVersion))
	return Binaries{
		Etcd:              filepath.Join(cp, "etcd"),
		APIServer:         filepath.Join(cp, "kube-apiserver"),
		ControllerManager: filepath.Join(cp, "kube-controller-manager"),
		Scheduler:         filepath.Join(cp, "kube-scheduler"),
		Kubectl:           filepath.Join(cp, "kubectl"),
		Kubeadm:           env(EnvKubeadm, filepath.Join(cache, "kubeadm", KubernetesVersion, "kubeadm")),
		Kubelet:           env(EnvKubelet, filepath.Join(cache, "kubelet", KubernetesVersion, "kubelet")),
		Operator:          filepath.Join(op, "operator"),
		OperatorCRDs:      filepath.Join(op, "crds"),
		KubeStateMetrics:  env(EnvKubeStateMetrics, filepath.Join(cache, "kube-state-metrics", KubeStateMetricsVersion, "kube-state-metrics")),
		Prometheus:        env(EnvPrometheus, filepath.Join(cache, "prometheus", PrometheusVersion, "prometheus")),
	}
}

// tools are the host programs the cluster needs.
var tools = []string{"unshare", "nsenter", "mount", "ip", "iptables"}

// Available reports whether a cluster can run here, and if not, why.
func Available() (bool, string) {
	if os.Geteuid() != 0 {
		return false, "the cluster needs root; run the tests as root (scripts/test.sh does so in CI)"
	}
	b := Find()
	for _, p := range []string{b.Etcd, b.APIServer, b.ControllerManager, b.Scheduler, b.Kubectl, b.Kubeadm, b.Kubelet, b.Operator, b.OperatorCRDs, b.KubeStateMetrics, b.Prometheus} {
		if _, err := os.Stat(p); err != nil {
			return false, fmt.Sprintf("cluster: %v; run `bash scripts/deps.sh` as root (it builds them into %s)", err, runtimetest.CacheDir())
		}
	}
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			return false, fmt.Sprintf("cluster: %s not found (%v); install util-linux, iproute2 and iptables", tool, err)
		}
	}
	return true, ""
}

// Require skips the test when a cluster cannot run here, or fails it when
// SANDBOXPIN_REQUIRE_RUNTIMES=1.
func Require(t testing.TB) {
	t.Helper()
	runtimetest.Require(t, "cluster", Available)
}

// Process is a running program of the cluster, its output in Log and in a
// file.
type Process struct {
	Name    string
	LogPath string

	log    runtimetest.SyncBuffer
	logf   *os.File
	cmd    *exec.Cmd
	exited chan struct{}
	once   sync.Once
}

// stopGrace is how long Stop waits after SIGTERM before SIGKILL.
const stopGrace = 15 * time.Second

// startProcess starts argv (its own process group) with its output in
// dir/name.log; t.Cleanup stops it, and logs its output when t failed.
func startProcess(t testing.TB, dir, name string, argv ...string) *Process {
	t.Helper()
	p, err := newProcess(dir, name, argv...)
	if err != nil {
		t.Fatalf("clustertest: %v", err)
	}
	t.Cleanup(func() { p.cleanup(t) })
	return p
}

// newProcess is startProcess for callers that are not the test's
// goroutine: the caller registers p.cleanup.
func newProcess(dir, name string, argv ...string) (*Process, error) {
	p := &Process{Name: name, LogPath: filepath.Join(dir, name+".log")}
	f, err := os.Create(p.LogPath)
	if err != nil {
		return nil, err
	}
	p.logf = f
	cmd := exec.Command(argv[0], argv[1:]...)
	w := &tee{a: &p.log, b: f}
	cmd.Stdout, cmd.Stderr = w, w
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p.cmd, p.exited = cmd, make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// cleanup stops p and logs its output when t failed.
func (p *Process) cleanup(t testing.TB) {
	p.Stop()
	if t.Failed() {
		t.Logf("%s log (%s), last 16 KiB:\n%s", p.Name, p.LogPath, tail(p.Log(), 16<<10))
	}
}

// Stop ends the process group (SIGTERM, SIGKILL after 15 s) and waits.
func (p *Process) Stop() {
	p.once.Do(func() {
		pgid := p.cmd.Process.Pid
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(stopGrace):
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			<-p.exited
		}
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		_ = p.logf.Close()
	})
}

// Exited is closed when the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Log returns what the process wrote so far.
func (p *Process) Log() string { return p.log.String() }

type tee struct {
	a *runtimetest.SyncBuffer
	b *os.File
}

func (w *tee) Write(p []byte) (int, error) {
	_, _ = w.b.Write(p)
	return w.a.Write(p)
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// run runs argv to its end and returns its combined output.
func run(ctx context.Context, argv ...string) (string, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s: %w\n%s", strings.Join(argv, " "), err, out)
	}
	return string(out), nil
}

// poll calls f every interval until it returns true or an error, or ctx
// ends; then it returns the last error f gave, or ctx's.
func poll(ctx context.Context, interval time.Duration, f func() (bool, error)) error {
	var last error
	for {
		ok, err := f()
		if ok {
			return nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("%w (last: %w)", ctx.Err(), last)
			}
			return ctx.Err()
		case <-time.After(interval):
		}
	}
}
