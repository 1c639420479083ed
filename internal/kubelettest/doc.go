// Package kubelettest starts a real kubelet for tests: standalone (no API
// server, no kubeconfig), against a CRI endpoint that the test provides
// (a containerd from containerdtest, a CRI-O from criotest, a cri-dockerd
// from cridockerdtest, or a shim in front of one), with every directory it
// writes in one temporary directory.
//
//	ctrd := containerdtest.Start(t, containerdtest.V1, containerdtest.Options{...})
//	k := kubelettest.Start(t, kubelettest.Options{RuntimeEndpoint: ctrd.Endpoint})
//	line, err := k.WaitForLog(ctx, kubelettest.RemovingImage(id))
//
// By default the node is put under disk pressure (evictionHard
// imagefs.available: 99%), so that the kubelet's eviction manager runs image
// garbage collection every 10 s ([GCInterval]), and imageMinimumGCAge is 1 s
// ([DefaultMinimumGCAge]): an image the runtime does not pin is removed within
// about two rounds of the kubelet seeing it. That is the deletion sandboxpin
// exists to prevent; [RemovingImage] matches the kubelet's log line for it.
// With Options.NoDiskPressure and Options.MaximumGCAge (imageMaximumGCAge,
// KEP-4210) the kubelet's own periodic GC removes them by age instead, in its
// round [ImageGCPeriod] (5 min) after the start; [GCRoundDone] matches the
// end of such a round under [GCRoundVModule].
//
// # Isolation
//
// The kubelet runs under util-linux unshare in a private mount and network
// namespace (see [Start]):
//   - the network namespace holds only a loopback interface, so the kubelet
//     can dial nothing but unix sockets, its ports are free whatever else runs
//     here, and the iptables chains it creates (KUBE-IPTABLES-HINT,
//     KUBE-KUBELET-CANARY) vanish with it;
//   - in the mount namespace the six kernel settings the kubelet would set on
//     the host (vm.overcommit_memory, vm.panic_on_oom, kernel.panic,
//     kernel.panic_on_oops, kernel.keys.root_maxkeys and root_maxbytes; see
//     setupKernelTunables in pkg/kubelet/cm/container_manager_linux.go at
//     v1.37.2) are covered by files that already hold the values it wants,
//     so it writes none of them; /run, /var/log and /var/lib are empty
//     tmpfs mounts there (it always creates /var/log/containers, and its
//     iptables calls /run/xtables.lock); any mount it makes vanishes with it.
//
// The configuration keeps the rest on the host unchanged: cgroupsPerQOS false
// and enforceNodeAllocatable [] (no kubepods cgroups), and --root-dir,
// --cert-dir, podLogsDir and staticPodPath in the temporary directory. The
// test's cleanup stops the kubelet, checks that no mount under that directory
// is left and that the kernel settings are what they were, and removes it.
// Measured with kubelet v1.37.2 next to containerd 1.6.20 and 2.4.2: no new
// cgroup, iptables rule, mount, kernel setting or file under /run, /var/lib,
// /var/log or /etc/kubernetes on the host.
//
// /sys/kernel/mm/hugepages is covered too ([hugePages]): the kubelet then sets
// no hugetlb limits, which CRI-O passes to runc and runc cannot set where the
// hugetlb controller is enabled but not mounted, as here.
//
// The log methods ([Kubelet.WaitForLog], [Kubelet.Lines], [Kubelet.Log],
// [Kubelet.Errors]) are safe for concurrent use, also with [Kubelet.Stop].
//
// # Pods and metrics
//
// [Kubelet.AddStaticPod] adds a static pod to a running kubelet, and
// [Kubelet.RemoveStaticPod] removes it. A pod needs
// a runtime that can run it here: containerdtest's RestrictOOMScoreAdj (this
// machine lacks CAP_SYS_RESOURCE, and sandboxes get oom_score_adj -998), and
// its Offline (or criotest's), so that a pull the pod causes fails at once
// instead of leaving the machine. [Kubelet.Get] fetches a path of the
// kubelet's read-only port ([ReadOnlyPort], such as /metrics) from inside
// its network namespace; [HistogramOf], [GaugeOf] and [SamplesOf] (labelled
// samples, such as the shim's calls by method and code) read an exposition.
// [ErrorsOf] reduces the error lines of a piece of the log for comparison.
//
// # Requirements
//
// Root, the kubelet (SANDBOXPIN_KUBELET, default
// $SANDBOXPIN_CACHE/kubelet/v1.37.2/kubelet, built by scripts/deps.sh),
// unshare, mount and ip. When something is missing the test is skipped with a
// message that says how to get it, or fails under SANDBOXPIN_REQUIRE_RUNTIMES=1;
// under -short it always skips. TestExporterPod runs the release's image:
// the one scripts/release.sh writes into SANDBOXPIN_RELEASE_DIR when that is
// set, else one it builds the same way (internal/release).
package kubelettest
