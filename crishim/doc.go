// Package crishim is a CRI proxy that sets Image.Pinned on the node's
// sandbox image, for runtimes that pin too little: containerd before
// 1.6.22 and 1.7.3 never sets it, and containerd 2.x and cri-dockerd
// compare the configured sandbox image as a raw string, so
// "k8s.gcr.io/pause:3.10.1" does not protect the same image stored as
// "registry.k8s.io/pause:3.10.1". Since kubelet 1.29 that flag is all that
// keeps the image garbage collector away from the pause image.
//
// `sandboxpin shim` runs it; a program of one's own does the same:
//
//	s, err := crishim.New(ctx, crishim.Options{
//		Listen:          "unix:///run/sandboxpin/shim.sock",
//		RuntimeEndpoint: "unix:///run/containerd/containerd.sock",
//		// Resolve this node's rules: resolve.Options with the root, aliases
//		// and versions (a zero one reads this node's "/"); or Loader: rules
//		// of one's own.
//		Node: &resolve.Options{Root: resolve.DirFS("/")},
//	})
//	if err != nil {
//		return err
//	}
//	return s.Serve(ctx) // until ctx ends; s.Reload on SIGHUP
//
// Then point the kubelet (--container-runtime-endpoint) and crictl at the
// shim's socket. deploy/systemd holds a unit and a kubelet drop-in.
//
// # Which to use
//
//   - Upgrade or configure the runtime when you can: containerd 1.6.22+,
//     1.7.3+ and 2.x pin their configured sandbox image when it is stored
//     under exactly that name (`sandboxpin audit` says whether it is).
//   - Run this package (`sandboxpin shim`) on a node the runtime's
//     configuration cannot fix: it forwards every call undecoded, any
//     method of any cri-api version, and costs little (TestHopTable
//     prints the figures).
//   - Write an interceptor (examples/crishim: [cri.MarkPinned] over a
//     [pin.Matcher]) when your own server already decodes CRI calls.
//
// # What it does
//
// The shim listens on its own socket and forwards every RuntimeService and
// ImageService call to the runtime unchanged, methods this build does not
// know included. In the answers to ListImages, ImageStatus and StreamImages
// it sets Pinned on the images that the node's resolved sandbox image and
// pinned images (package resolve, with [Options.Node] and what the runtime
// reports), or an [Options.Pins] pattern, pin; it never clears a Pinned the
// runtime set itself. On CRI-O it adds the resolved sandbox image as a
// Strict, alias-aware rule (CRI-O pins it only under its exact name).
//
// The shim is a gRPC proxy: it takes each call as a gRPC server that
// knows no service (every method reaches one handler), makes the same call
// to the runtime over one connection that all its clients share, and
// passes the messages both ways as undecoded bytes, headers and trailers
// included; a status from the runtime is passed on as it is. In an image
// answer it walks the encoded images and appends "pinned: true" (field 8)
// to those the rules pin, splicing the few bytes in without copying the
// answer; it decodes nothing else. An answer it cannot read passes
// unchanged (and is logged). Streaming calls (StreamImages,
// GetContainerEvents) stream through, message by message. Exec, Attach
// and PortForward answer the runtime's own streaming URL, unchanged: the
// kubelet then connects to the runtime's streaming server, not through
// the shim.
//
// [Shim.Reload] resolves the node again and swaps in the new rules; when
// that fails (a config file became malformed, the runtime is down) the old
// rules stay and the error says why.
//
// The runtime may come and go. While it is away, calls fail with
// Unavailable, as on the runtime's own socket; the shim reconnects within
// a second of its return (gRPC backoff capped at 1 s), and the kubelet's
// connection to the shim stays up. When its socket does not exist yet at
// [New], the shim serves anyway (so the kubelet finds the shim's socket)
// and retries every second: until the rules load, ListImages, ImageStatus
// and StreamImages fail with Unavailable rather than answer with the pause
// image unpinned (which could let the kubelet's image GC delete it), and
// other calls are forwarded. A node configuration that does not resolve is
// an error of [New].
//
// # Message size
//
// The kubelet takes answers of up to 16 MiB (k8s.io/cri-client v0.37.2
// pkg/utils.go maxMsgSize) and sends requests of any size; containerd
// (v2.4.2 defaults) and cri-dockerd (v0.4.4) take and send 16 MiB, CRI-O
// 80 MiB (v1.36.3 pkg/config). The shim takes answers of up to 16 MiB from
// the runtime and requests of up to 80 MiB from its clients, and sends what
// it took without a limit of its own. So the kubelet sees what it sees
// directly (TestMessageLimits): an answer of 16 MiB or less arrives; a
// larger one fails with ResourceExhausted, "grpc: received message larger
// than max (N vs. 16777216)", word for word; a request the runtime refuses
// fails with the runtime's own error. One difference is deliberate: the pin
// adds 2 bytes per image it pins (3 when a length prefix grows), and an
// answer that fits the 16 MiB only without them fails with
// ResourceExhausted through the shim, where directly it arrives with the
// pause image unpinned. The kubelet's image GC then removes nothing, since
// it could not list (kubernetes v1.37.2 pkg/kubelet/images/
// image_gc_manager.go: GarbageCollect returns ListImages' error first), and
// tries again at its next round.
//
// # Metrics
//
// With [Options.MetricsListen], [Shim.Serve] serves Prometheus metrics on
// /metrics and GET /healthz (200 once the shim has rules, 503 before):
//
//   - sandboxpin_shim_calls_total{method,code}: calls forwarded, by CRI
//     method ("other" for a method this build does not know) and the gRPC
//     status code the client got;
//   - sandboxpin_shim_images_pinned_total: images the shim pinned, once per
//     answer;
//   - sandboxpin_shim_rule_reloads_total{result}: ok, failed (no rules
//     yet) or kept (failed; the previous rules stay);
//   - sandboxpin_shim_runtime_reconnects_total: the runtime reached again
//     after a failed dial or a connection it ended;
//   - sandboxpin_shim_rules and sandboxpin_shim_rules_loaded;
//   - the Go and process collectors.
//
// Label values are bounded (known methods, 17 codes): a client sending
// made-up method names adds no series. A program with a Prometheus
// registry of its own registers [Shim.Collector] on it instead (the
// sandboxpin_shim_ metrics, without the Go and process collectors).
//
// # Performance
//
// One data path: the shim forwards every call's bytes and rewrites only
// the pinned fields of image answers, without copying the answer. The
// budgets (docs/design.md, Budgets) are checked by TestHopTable against a
// bare one-hop gRPC proxy, the least any proxy costs: ListImages within
// 1.25× of it, ImageStatus within it plus 10 % of a direct call;
// `go test -run TestHopTable -v .` prints the figures of the machine it
// runs on.
//
// # Concurrency
//
// [Shim.Serve] runs once (a second call returns [ErrClosed]); [Shim.Reload]
// and [Shim.Handler] may be called from any goroutine meanwhile. The zero
// [Options] is not valid: Listen or Listener (a socket that systemd's
// socket activation passes in), RuntimeEndpoint, and Node or Loader (one
// of them) are required. [Shim.Close] releases a shim that will not
// serve; Serve closes it as it returns.
package crishim
