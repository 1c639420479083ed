// Package audit gives the verdict on one node: does it run pods, is its
// sandbox image safe from the kubelet's image garbage collection and
// available to an offline pod start, and if not, what exactly to change.
//
// Resolve the node, ask its runtime for its images and for its own lookup
// of the configured name, then judge:
//
//	res, err := resolve.Resolve(ctx, resolve.Options{Live: client})
//	images, err := client.Images(ctx)                     // ListImages
//	img, err := client.ImageStatus(ctx, res.SandboxImage) // the runtime's own lookup
//	found := audit.LookupNotFound
//	if img.GetId() != "" {
//		found = audit.LookupFound
//	}
//	v, err := audit.Judge(res, audit.Observation[*runtimeapi.Image]{Images: images, Lookup: found})
//	if !v.Protected() {
//		fmt.Println(v.Status, v.Fix.Message)
//	}
//
// Offline, as an installer or `sandboxpin audit --images` does, read what
// `crictl images -o json` printed with [ReadImages] and leave the lookup
// [LookupNotAsked]: Judge then predicts it with [PredictLookup], the way
// each runtime looks its sandbox image up:
//
//	images, err := audit.ReadImages(f)
//	v, err := audit.Judge(res, audit.ListedObservation{Images: images})
//
// [Judge] reads nothing itself: it takes what the caller got from a live
// runtime (criinfo/cri), a `crictl images -o json` capture, or a test, as
// an [Observation], a struct that may grow. The verdict is data: a
// [Status] to switch on, the sandbox image as stored ([Sandbox]: under
// which name, spelled how, pinned or not), every image with the rule that
// must pin it and the runtime's own flag, typed findings (a [resolve.Note]
// each: the verdict's own, of this package's kinds, and the resolved
// node's that matter), the fixes for them ([resolve.Fix]), the most urgent
// first, and the one recommended first. sandboxpin's audit, serve and
// node-problem-detector summary render it; none of them decides anything
// of its own.
//
// # What counts
//
// The sandbox image is found among the stored images under any spelling
// (the aliases the result was resolved with, [resolve.Result.Aliases]:
// absent AliasRules are the defaults, an empty list none, as a nil
// *reference.Aliases is the defaults and reference.NoAliases() none in
// every package here; Docker Hub's forms, digests,
// the ID), preferring the configured string itself. It must be pinned by
// the runtime (its own Image.pinned), and stored under the configured name,
// which is what the runtime looks up when it starts a pod sandbox
// (containerd, CRI-O and cri-dockerd alike: seen live in TestKubeletGC of
// internal/kubelettest). Any other image that the result's
// [resolve.Result.Matcher] pins must be pinned by the runtime too; one that
// is not is a finding, not a status: the status speaks of the sandbox image,
// or of the node as a whole when it runs no pods at all ([StatusWillNotStart]:
// a fix of the result with [resolve.UrgencyStops], such as kubelet 1.35 or
// later with --pod-infra-container-image still set; give resolve the
// kubelet's version to know it).
//
// # Order and authority
//
// Findings and fixes go by the urgency of the fix ([resolve.Urgency]): what
// stops the node, then what leaves the sandbox image unprotected or
// missing, then the rest. The runtime's report outranks the result's
// predictions: when the runtime stores the sandbox image as configured and
// pins it, the result's fixes of urgency [resolve.UrgencyUnprotected] (what
// it expected the runtime's release not to pin) are left out of the
// verdict; they stay in the result.
//
// # Concurrency
//
// Judge keeps no state and is safe for concurrent use; a Verdict is a plain
// value.
package audit
