// Package criinfo reads what a CRI runtime says about itself: which runtime it
// is and which sandbox ("pause") image it reports.
//
// Pass the Info map of a CRI StatusResponse (Status with Verbose set) to
// [Parse], or the output of `crictl info` to [ParseJSON]:
//
//	info, err := criinfo.Parse(resp.GetInfo())
//	if err != nil {
//		return err
//	}
//	if info.SandboxImageReported {
//		fmt.Println(info.SandboxImage)
//	}
//
// The package is pure: it does not import gRPC or k8s.io/cri-api, so that
// installers and runtimes can link it cheaply. The live client that asks a CRI
// socket is in package [github.com/sandboxpin/sandboxpin/criinfo/cri].
//
// # What the runtimes report
//
// The CRI API leaves StatusResponse.Info free-form ("value should be in json
// format"). The key that matters is "config", a JSON object:
//
//   - containerd 1.x: the whole CRI plugin config, with "sandboxImage" and
//     "containerdEndpoint" (observed on 1.6.20, see testdata).
//   - containerd 2.x: the CRI runtime config, with "containerdEndpoint" but no
//     sandbox image at all (observed on 2.2.9): [Info.SandboxImageReported] is
//     false and the config file must be read instead.
//   - CRI-O (since 1.27) and cri-dockerd (since 0.3.2): only
//     {"sandboxImage": ...}, the raw configured string. The two cannot be told
//     apart from the Info map alone; [Info.Runtime] is then [RuntimeUnknown]
//     and the live client fills it from the Version RPC.
//
// Values under keys other than "config" are not read, and need not be JSON
// (containerd's "lastCNILoadStatus" is plain text); their presence may identify
// the runtime. `crictl info` embeds each Info value as JSON when it parses as
// JSON and as a JSON string otherwise, next to "status", "runtimeHandlers" and
// "features"; [ParseJSON] reads that shape.
//
// # Hostile input
//
// Both parsers never panic and never return an empty answer for broken input.
// Input over [MaxInputSize] bytes, or JSON of more than [MaxTokens] tokens,
// fails with [ErrTooLarge], JSON nested deeper than [MaxDepth] with
// [ErrTooDeep] (both checked while scanning tokens, before anything is
// decoded), and a "config" value that is not a JSON object, or
// whose "sandboxImage" is not a non-empty string, with [ErrInvalidInfo]. Every
// error is a [*ParseError] that names the key and the byte offset. Duplicate
// keys, which encoding/json would silently resolve to the last one, are errors.
//
// All functions are safe for concurrent use.
package criinfo
