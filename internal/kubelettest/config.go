package kubelettest

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Ports of the kubelet's servers, on 127.0.0.1 of its own network namespace
// (so nothing else can hold them): not the defaults 10250 and 10248, so that
// a mistake in the isolation shows as a second listener, not as a clash with
// a real node's kubelet.
const (
	port        = 10350
	healthzPort = 10348
)

// config returns the KubeletConfiguration for a kubelet in dir.
func config(dir string, opts Options) string {
	minAge := opts.MinimumGCAge
	if minAge == 0 {
		minAge = DefaultMinimumGCAge
	}
	q := func(s string) string { return fmt.Sprintf("%q", s) }
	var b strings.Builder
	b.WriteString("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n")
	fmt.Fprintf(&b, "containerRuntimeEndpoint: %s\n", q(opts.RuntimeEndpoint))
	// cgroupfs, as the runtimes of containerdtest and criotest use; no
	// systemd is needed. This machine has cgroup v1, which v1.37 refuses
	// unless failCgroupV1 is false.
	b.WriteString("cgroupDriver: cgroupfs\nfailCgroupV1: false\nfailSwapOn: false\n")
	// No kubepods/QoS cgroups and no node-allocatable enforcement: the
	// kubelet then creates no cgroup on the host.
	b.WriteString("cgroupsPerQOS: false\nenforceNodeAllocatable: []\n")
	fmt.Fprintf(&b, "staticPodPath: %s\nfileCheckFrequency: 1s\n", q(filepath.Join(dir, "manifests")))
	fmt.Fprintf(&b, "podLogsDir: %s\n", q(filepath.Join(dir, "pod-logs")))
	fmt.Fprintf(&b, "address: 127.0.0.1\nport: %d\nreadOnlyPort: %d\nhealthzBindAddress: 127.0.0.1\nhealthzPort: %d\n", port, ReadOnlyPort, healthzPort)
	// The defaults (webhook authentication and authorization) need an API
	// server; without one the kubelet would not start.
	b.WriteString("authentication:\n  anonymous:\n    enabled: false\n  webhook:\n    enabled: false\n")
	b.WriteString("authorization:\n  mode: AlwaysAllow\n")
	fmt.Fprintf(&b, "imageMinimumGCAge: %s\n", minAge)
	if opts.MaximumGCAge > 0 {
		fmt.Fprintf(&b, "imageMaximumGCAge: %s\n", opts.MaximumGCAge)
	}
	if !opts.NoDiskPressure {
		// Image GC as the eviction manager runs it under disk pressure:
		// every GCInterval, freeing every unused, unpinned image older than
		// imageMinimumGCAge (DeleteUnusedImages frees math.MaxInt64 bytes).
		// Any file system that is less than 99 % free is under pressure.
		b.WriteString("evictionHard:\n  imagefs.available: \"99%\"\n")
	} else {
		// No disk pressure however full the host's disk is (the kubelet's
		// image file system is the host's): the defaults would evict at 15 %
		// free and collect images by usage at 85 % used. At v1.37.2 the
		// kubelet fills in a default for each evictionHard signal the config
		// leaves out (cmd/kubelet/app/server.go) and ignores a "0%"
		// threshold (parseThresholdStatement, pkg/kubelet/eviction/helpers.go),
		// and image GC by usage starts at usage >= imageGCHighThresholdPercent
		// (pkg/kubelet/images/image_gc_manager.go): 100 is a full disk.
		b.WriteString("evictionHard:\n")
		for _, signal := range []string{"imagefs.available", "imagefs.inodesFree", "nodefs.available", "nodefs.inodesFree"} {
			fmt.Fprintf(&b, "  %s: \"0%%\"\n", signal)
		}
		b.WriteString("imageGCHighThresholdPercent: 100\nimageGCLowThresholdPercent: 99\n")
	}
	return b.String()
}
