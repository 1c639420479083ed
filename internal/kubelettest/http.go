package kubelettest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandboxpin/sandboxpin/internal/runtimetest"
)

// ReadOnlyPort is the kubelet's read-only HTTP port (readOnlyPort), on
// 127.0.0.1 of its own network namespace: it serves /metrics and /pods
// without authentication (InstallDefaultHandlers in
// pkg/kubelet/server/server.go at v1.37.2). Nothing outside the kubelet's
// network namespace can reach it; [Kubelet.Get] dials from inside.
const ReadOnlyPort = 10355

// Get fetches path (such as "/metrics") from the kubelet's read-only port
// and returns the body.
func (k *Kubelet) Get(ctx context.Context, path string) (string, error) {
	if k.cmd == nil || k.cmd.Process == nil {
		return "", errors.New("kubelettest: the kubelet is not running")
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	body, err := GetInNetns(ctx, k.cmd.Process.Pid, "http://127.0.0.1:"+strconv.Itoa(ReadOnlyPort)+path)
	if err != nil {
		return "", fmt.Errorf("kubelettest: %w", err)
	}
	return body, nil
}

// GetInNetns returns the body of a GET of url from inside the network
// namespace of process pid (a pod's, a kubelet's).
func GetInNetns(ctx context.Context, pid int, url string) (string, error) {
	client := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return dialInNetns(ctx, pid, network, addr)
		},
		DisableKeepAlives: true,
	}}
	return runtimetest.Get(ctx, client, url)
}

// dialInNetns dials addr from inside the network namespace of process pid.
// The socket is made on a thread that enters that namespace and is never
// given back: the goroutine ends locked to it, so the Go runtime ends the
// thread too, and no other goroutine ever runs in the namespace.
func dialInNetns(ctx context.Context, pid int, network, addr string) (net.Conn, error) {
	type result struct {
		conn net.Conn
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		fd, err := unix.Open(filepath.Join("/proc", strconv.Itoa(pid), "ns", "net"), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			ch <- result{err: &os.PathError{Op: "open", Path: fmt.Sprintf("/proc/%d/ns/net", pid), Err: err}}
			return
		}
		defer unix.Close(fd)
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			ch <- result{err: fmt.Errorf("setns into the network namespace of %d: %w", pid, err)}
			return
		}
		var d net.Dialer
		conn, err := d.DialContext(ctx, network, addr)
		ch <- result{conn, err}
	}()
	r := <-ch
	return r.conn, r.err
}

// Histogram is the sum and count of a Prometheus histogram (or summary).
type Histogram struct {
	Sum   float64
	Count uint64
}

// Mean returns Sum/Count, or 0 when Count is 0.
func (h Histogram) Mean() time.Duration {
	if h.Count == 0 {
		return 0
	}
	return time.Duration(h.Sum / float64(h.Count) * float64(time.Second))
}

// HistogramOf reads the unlabelled histogram name (such as
// "kubelet_pleg_relist_duration_seconds") from a text exposition.
func HistogramOf(exposition, name string) (Histogram, error) {
	var h Histogram
	var sum, count bool
	for _, line := range strings.Split(exposition, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case name + "_sum":
			v, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				return h, fmt.Errorf("kubelettest: %s: %w", line, err)
			}
			h.Sum, sum = v, true
		case name + "_count":
			v, err := strconv.ParseUint(f[1], 10, 64)
			if err != nil {
				return h, fmt.Errorf("kubelettest: %s: %w", line, err)
			}
			h.Count, count = v, true
		}
	}
	if !sum || !count {
		return h, fmt.Errorf("kubelettest: no histogram %s in the exposition", name)
	}
	return h, nil
}

// AddStaticPod writes a static pod manifest into the running kubelet's
// staticPodPath; the kubelet sees it within fileCheckFrequency (1 s).
func (k *Kubelet) AddStaticPod(name, manifest string) error {
	if strings.ContainsRune(name, '/') {
		return fmt.Errorf("kubelettest: static pod file name %q has a slash", name)
	}
	dir := filepath.Join(k.Dir, "manifests")
	tmp := filepath.Join(k.Dir, "."+name+".tmp")
	if err := os.WriteFile(tmp, []byte(manifest), 0o600); err != nil {
		return err
	}
	// A rename, so that the kubelet never reads half a file.
	return os.Rename(tmp, filepath.Join(dir, name))
}

// RemoveStaticPod removes a static pod manifest that AddStaticPod (or
// Options.StaticPods) wrote: the kubelet stops the pod within
// fileCheckFrequency (1 s).
func (k *Kubelet) RemoveStaticPod(name string) error {
	if strings.ContainsRune(name, '/') {
		return fmt.Errorf("kubelettest: static pod file name %q has a slash", name)
	}
	return os.Remove(filepath.Join(k.Dir, "manifests", name))
}

// errorLine matches a klog error line: "E1203 17:05:41.123456    4242
// file.go:123] message".
var errorLine = regexp.MustCompile(`^E\d{4} [\d:.]+\s+\d+ ([^\]]+)\] (.*)$`)

// variable matches what differs between two runs of one error: IDs, hashes,
// socket paths, durations and numbers.
var variable = regexp.MustCompile(`[0-9a-f]{12,}|/tmp/[^\s"\\]+|[0-9]+(\.[0-9]+)?(ns|µs|ms|s|m)?`)

// vanishedCgroup matches cAdvisor's error for a cgroup directory that was
// removed between its listing and its inotify watch: it logs it and goes on
// (container/raw/watcher.go in github.com/google/cadvisor/lib v0.60.5, the
// kubelet v1.37.2's, citing kubernetes/kubernetes#28997). Every kubelet's
// cAdvisor watches the whole cgroup tree, so any container on the machine
// that exits quickly, another test's included, can cause it.
var vanishedCgroup = regexp.MustCompile(`^watcher\.go:\d+\] Failed to watch directory ".*": inotify_add_watch .*: no such file or directory$`)

// machineStats matches the kubelet's error for cAdvisor stats that failed
// for some of the machine's cgroups: it asks cAdvisor for every container
// under "/", recursively, and logs a partial failure and goes on
// (getCadvisorContainerInfo in pkg/kubelet/stats/cadvisor_stats_provider.go
// at v1.37.2). Any container on the machine that ends meanwhile, another
// test's included, can cause it (seen in CI through one kubelet of a
// shim-and-direct pair, not the other).
var machineStats = regexp.MustCompile(`^cadvisor_stats_provider\.go:\d+\] "Partial failure issuing cadvisor\.ContainerInfoV2"`)

// Errors returns the kubelet's error lines so far, each reduced to its
// source location and message with IDs, paths and numbers replaced by "#",
// so that the errors of two kubelets can be compared.
func (k *Kubelet) Errors() []string { return ErrorsOf(k.Log()) }

// ErrorsOf returns the error lines of a piece of a kubelet's log (such as
// what it wrote between two calls of [Kubelet.Log]) as [Kubelet.Errors]
// does. It leaves out cAdvisor's races with the machine's other cgroups (a
// vanishing cgroup, stats that failed for some), which say nothing about
// the runtime the kubelet talks to.
func ErrorsOf(log string) []string {
	var out []string
	for _, line := range strings.Split(log, "\n") {
		m := errorLine.FindStringSubmatch(line)
		if m == nil || vanishedCgroup.MatchString(m[1]+"] "+m[2]) || machineStats.MatchString(m[1]+"] "+m[2]) {
			continue
		}
		msg := m[2]
		// The message proper: klog's structured lines quote it, and the
		// key=value pairs that follow carry the details.
		if strings.HasPrefix(msg, `"`) {
			if i := strings.Index(msg[1:], `"`); i >= 0 {
				msg = msg[:i+2]
			}
		}
		out = append(out, variable.ReplaceAllString(m[1]+"] "+msg, "#"))
	}
	return out
}

// GaugeOf reads the unlabelled gauge or counter name from a text exposition.
func GaugeOf(exposition, name string) (float64, error) {
	for _, line := range strings.Split(exposition, "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == name {
			v, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				return 0, fmt.Errorf("kubelettest: %s: %w", line, err)
			}
			return v, nil
		}
	}
	return 0, fmt.Errorf("kubelettest: no %s in the exposition", name)
}
