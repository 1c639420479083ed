// Package kubeadmtest runs a real kubeadm for tests: `kubeadm config images
// list` (offline with an explicit Kubernetes version) and `kubeadm init phase
// preflight` against a runtime socket started by the test (see
// internal/containerdtest), capturing what kubeadm says about the runtime's
// sandbox image.
//
//	kubeadmtest.Require(t)
//	imgs := kubeadmtest.ImagesList(t, kubeadmtest.Config{KubernetesVersion: "v1.37.2"})
//	res := kubeadmtest.Preflight(t, kubeadmtest.Config{
//		KubernetesVersion: "v1.37.2",
//		CRISocket:         c.Endpoint,
//	})
//	res.SandboxWarning // kubeadm's "inconsistent sandbox image" warning, or ""
//
// # Requirements
//
// The kubeadm binary is the one scripts/deps.sh builds (build_kubeadm: the
// k8s.io/kubernetes module from the Go module proxy, with the version
// ldflags, so that it calls itself by its version), found through
//
//	SANDBOXPIN_KUBEADM                  $SANDBOXPIN_CACHE/kubeadm/v1.37.2/kubeadm
//	SANDBOXPIN_KUBEADM_VERSION          v1.37.2
//	SANDBOXPIN_KUBEADM_PATCHED          $SANDBOXPIN_CACHE/kubeadm-patched-compare+fallback/v1.37.2/kubeadm
//	SANDBOXPIN_KUBEADM_PATCHED_COMPARE  $SANDBOXPIN_CACHE/kubeadm-patched-compare/v1.37.2/kubeadm
//
// The last two are kubeadm with contrib/kubeadm's patches, run through
// [Config].Binary: compare.patch and fallback.patch ([PatchedBinary]), and
// compare.patch alone ([PatchedCompareBinary]). [Config].EtcContainerd shows
// kubeadm the test runtime's config.toml as /etc/containerd, bind-mounted in
// a mount namespace of its own, since fallback.patch reads the node's runtime
// config where the runtime reports no sandbox image.
//
// Its tests need root (kubeadm's pre-flight refuses to run otherwise) and are
// skipped under -short. When something is missing the test is skipped with a
// message that says how to get it, unless SANDBOXPIN_REQUIRE_RUNTIMES=1,
// under which it fails.
//
// # What kubeadm's pre-flight does here
//
// `kubeadm init phase preflight` (v1.37.2, cmd/kubeadm/app/cmd/phases/init/
// preflight.go) runs the node checks, then the ImagePull check
// (cmd/kubeadm/app/preflight/checks.go, ImagePullCheck.Check): it asks the
// runtime for its sandbox image through CRI Status Info["config"].sandboxImage
// (cmd/kubeadm/app/util/runtime/runtime.go, SandboxImage) and, when that
// differs from its own pause image as a string, logs a klog warning ("detected
// that the sandbox image %q of the container runtime is inconsistent with that
// used by kubeadm"); when the runtime reports no sandbox image it only logs at
// -v=4, so it says nothing. Then it pulls each image it lists unless the
// runtime already has it (pull policy IfNotPresent). Preflight gives kubeadm
// a config with imagePullPolicy IfNotPresent and a documentation advertise
// address (192.0.2.10), and ignores only the node checks a test machine cannot satisfy
// ([IgnoredChecks]); a failed image pull stays an error.
package kubeadmtest
