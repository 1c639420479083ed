// Package audit gives the verdict on one node: is its sandbox image safe
// from the kubelet's image garbage collection and available to an offline
// pod start, and if not, what exactly to change.
//
// Resolve the node, ask its runtime for its images and for its own lookup
// of the configured name, then judge:
//
//	res, err := resolve.Resolve(ctx, resolve.Options{Live: client})
//	images, err := client.Images(ctx)                     // ListImages
//	img, err := client.ImageStatus(ctx, res.SandboxImage) // the runtime's own lookup
//	v, err := audit.Judge(res, images, img.GetId() != "")
//	if !v.Protected() {
//		fmt.Println(v.Status, v.Fix.Message)
//	}
//
// [Judge] reads nothing itself: it takes what the caller got from a live
// runtime (criinfo/cri), a `crictl images -o json` capture, or a test. The
// verdict is data: a [Status] to switch on, the sandbox image as stored
// ([Sandbox]: under which name, spelled how, pinned or not), every image
// with the rule that must pin it and the runtime's own flag, typed findings
// (a [resolve.Note] each, of this package's kinds), and one recommended fix
// ([resolve.Fix]). sandboxpin's audit, serve and node-problem-detector
// summary render it; none of them decides anything of its own.
//
// # What counts
//
// The sandbox image is found among the stored images under any spelling
// (the aliases the result was resolved with, Docker Hub's forms, digests,
// the ID), preferring the configured string itself. It must be pinned by
// the runtime (its own Image.pinned), and stored under the configured name,
// which is what the runtime looks up when it starts a pod sandbox
// (containerd, CRI-O and cri-dockerd alike: seen live in TestKubeletGC of
// internal/kubelettest). Any other image that the result's
// [resolve.Result.Matcher] pins must be pinned by the runtime too; one that
// is not is a finding, not a status: the status speaks of the sandbox image.
//
// # Concurrency
//
// Judge keeps no state and is safe for concurrent use; a Verdict is a plain
// value.
package audit
