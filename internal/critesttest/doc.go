// Package critesttest runs the CRI validation suite, cri-tools' critest,
// offline: against a runtime in a network and mount namespace of the test's
// own, with a CNI bridge and an in-memory registry that serves busybox
// stand-ins under the names critest pulls.
//
//	if !critesttest.Isolate(t, 10*time.Minute) {
//		return // the test ran again inside the namespaces
//	}
//	reg := registrytest.Start(t)
//	critesttest.Push(t, reg, critesttest.DefaultBinaries().Busybox)
//	ctrd := containerdtest.Start(t, containerdtest.V1, containerdtest.Options{
//		Registry: reg.Addr, RestrictOOMScoreAdj: true, SandboxImage: critesttest.PauseImage})
//	// critesttest.WriteCNI into ctrd.Dir's cni and cni-bin, then
//	rep, err := critesttest.Run(ctx, bin, critesttest.RunOptions{Endpoint: ctrd.Endpoint, ...})
//
// # Images
//
// [Images] lists the images critest v1.37.0 pulls on Linux, each built from
// a static busybox (with a hard link per applet, as the busybox image has
// them) with busybox's /etc/passwd and /etc/group, and the User and files
// of the real image. Debian's busybox-static lacks two programs critest
// runs, pgrep and ipcs: small scripts stand in (pidof, /proc/sysvipc/shm).
// nginx and httpd are busybox's httpd, run under the name nginx with
// "master process" in its command line, as the HostPID and ContainerPID
// specs look for. The stand-ins cannot be everything the real images are:
// the nonewprivs image has no setuid program, busybox's shell runs ls
// itself (so masking /bin/ls changes nothing), and the image that critest
// names by digest is absent. The specs that need more fail; a test lists
// them with their reasons in a known-failure list ([ParseKnownFailures],
// [Check]).
//
// # Tests
//
// TestLiveCritest (CI) runs critest through `sandboxpin shim` on containerd
// 1.6.20 with the slow groups of specs left out (ciSkip says which, and
// why), and compares the result with testdata/critest-known-failures.txt.
// TestLiveCritestTable runs the whole suite on the runtime that
// SANDBOXPIN_CRITEST_TABLE names (containerd-1.6, containerd-2.4 or cri-o),
// directly and through the shim, for scripts/critest.sh;
// SANDBOXPIN_CRITEST_FOCUS narrows it to the specs a regular expression
// matches, and SANDBOXPIN_CRITEST_QUICK=1 leaves out what CI leaves out.
// CRI-O runs its pods in its rootless mode: it has no
// restrict_oom_score_adj, and without CAP_SYS_RESOURCE runc cannot give
// its infra containers their oom_score_adj.
//
// # Results
//
// [Run] reads critest's results from the JUnit report ginkgo writes
// (-ginkgo.junit-report): critest v1.37.0 accepts --report-dir but writes
// nothing there (pkg/framework/test_context.go defines it; nothing reads it).
//
// # Requirements
//
// Root, unshare and ip, and what scripts/deps.sh provides, found through
// these variables, with these defaults:
//
//	SANDBOXPIN_CRITEST  $SANDBOXPIN_CACHE/critest/v1.37.0/critest
//	SANDBOXPIN_BUSYBOX  /bin/busybox (Debian's busybox-static)
//	SANDBOXPIN_CNI_BIN  /usr/lib/cni (Debian's containernetworking-plugins)
//
// Without them [Require] skips the test, or fails it when
// SANDBOXPIN_REQUIRE_RUNTIMES=1; under -short it always skips.
package critesttest
