package kubelettest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// exposition is a piece of the kubelet's /metrics.
const exposition = `# HELP kubelet_pleg_relist_duration_seconds [ALPHA] Duration in seconds for relisting pods in PLEG.
# TYPE kubelet_pleg_relist_duration_seconds histogram
kubelet_pleg_relist_duration_seconds_bucket{le="0.005"} 48
kubelet_pleg_relist_duration_seconds_bucket{le="+Inf"} 51
kubelet_pleg_relist_duration_seconds_sum 0.17105252
kubelet_pleg_relist_duration_seconds_count 51
kubelet_running_pods 1
kubelet_running_pods_total{x="y"} 7
`

func TestHistogramOf(t *testing.T) {
	t.Parallel()
	h, err := HistogramOf(exposition, "kubelet_pleg_relist_duration_seconds")
	require.NoError(t, err)
	assert.Equal(t, Histogram{Sum: 0.17105252, Count: 51}, h)
	assert.InDelta(t, float64(3353971*time.Nanosecond), float64(h.Mean()), 10)
	assert.Zero(t, Histogram{}.Mean())

	_, err = HistogramOf(exposition, "kubelet_running_pods")
	require.Error(t, err)
	_, err = HistogramOf("x_sum 1\nx_count one\n", "x")
	require.Error(t, err)
}

func TestGaugeOf(t *testing.T) {
	t.Parallel()
	v, err := GaugeOf(exposition, "kubelet_running_pods")
	require.NoError(t, err)
	assert.InDelta(t, 1.0, v, 0)
	// Labelled series are not the unlabelled gauge.
	_, err = GaugeOf(exposition, "kubelet_running_pods_total")
	require.Error(t, err)
	_, err = GaugeOf("g x\n", "g")
	require.Error(t, err)
}

// TestErrors checks that two kubelets' error lines compare equal when they
// differ only in times, IDs, paths and numbers, and that cAdvisor's races
// with the machine's other cgroups (a vanished cgroup, stats that failed for
// some) are left out.
func TestErrors(t *testing.T) {
	t.Parallel()
	run := func(log string) []string {
		k := &Kubelet{log: &logBuffer{}}
		_, _ = k.log.Write([]byte(log))
		k.log.exit(nil)
		return k.Errors()
	}
	a := run(`I1203 20:02:00.082167    2377 kubelet.go:389] "Adding static pod path" path="/tmp/sbk1/manifests"
E1203 20:02:00.082167    2377 remote_runtime.go:325] "RunPodSandbox from runtime service failed" err="pull 0123456789abcdef0123"
E1203 20:02:01.000001    2377 cadvisor_stats_provider.go:525] "Partial failure issuing cadvisor.ContainerInfoV2" err="partial failures: [\"/tmp/sbp1/x\"]"
E1204 03:27:24.540343    2377 watcher.go:154] Failed to watch directory "/sys/fs/cgroup/cpuacct/test.slice:cri-containerd:0123456789abcdef": inotify_add_watch /sys/fs/cgroup/cpuacct/test.slice:cri-containerd:0123456789abcdef: no such file or directory
`)
	b := run(`E1203 21:12:09.123456   99999 remote_runtime.go:326] "RunPodSandbox from runtime service failed" err="pull fedcba9876543210fedc"
E1203 21:12:10.000001   99999 cadvisor_stats_provider.go:525] "Partial failure issuing cadvisor.ContainerInfoV2" err="partial failures: [\"/tmp/sbp2/y\"]"
W1203 21:12:10.000001   99999 warn.go:1] "not an error"
`)
	assert.Equal(t, []string{
		`remote_runtime.go:#] "RunPodSandbox from runtime service failed"`,
	}, a)
	assert.Equal(t, a, b)
	// Another error of the same watcher is kept.
	assert.Equal(t, []string{`watcher.go:#] Failed to watch directory "/sys/fs/cgroup/x": permission denied`},
		run(`E1204 03:27:24.540343    2377 watcher.go:154] Failed to watch directory "/sys/fs/cgroup/x": permission denied`+"\n"))
}
