package criinfo

import (
	"fmt"
	"sort"
)

// Limits on the input. They are far above what any runtime reports (containerd
// 1.6 sends about 4 KiB) and low enough that a hostile peer cannot make a
// caller allocate without bound.
const (
	// MaxInputSize is the largest input accepted, in bytes: the sum of the
	// keys and values for Parse, the document for ParseJSON. 16 MiB is also
	// the gRPC message size limit that kubelet and crictl use.
	MaxInputSize = 16 << 20
	// MaxDepth is the deepest JSON nesting accepted. containerd's config
	// nests 5 levels; 64 leaves room and keeps recursion shallow.
	MaxDepth = 64
	// MaxTokens is the most JSON tokens (keys, values, and each '{', '}',
	// '[' and ']') accepted in one JSON value: the "config" value for
	// Parse, the document for ParseJSON. The largest capture in testdata,
	// containerd 1.7's crictl info, has 341; 65,536 leaves room for a
	// config that lists many runtimes or registries. Reading a token costs
	// about 160 bytes of garbage and time, and a config object keeps each
	// of its keys to find duplicates: without the limit a 15 MiB config of
	// a million members allocated 420 MiB and took seconds.
	MaxTokens = 1 << 16
)

// Info is what a runtime says about itself. The zero value means nothing is
// known.
type Info struct {
	// Runtime is RuntimeContainerd, RuntimeCRIO, RuntimeCRIDockerd or
	// RuntimeUnknown, when the Info map alone does not tell.
	Runtime Runtime
	// RuntimeVersion is the runtime's version, "" when unknown. The Info map
	// does not carry it; the live client takes it from the Version RPC,
	// except for cri-dockerd, whose Version RPC states no version of its
	// own (see EngineVersion).
	RuntimeVersion string
	// EngineVersion is the version of the engine behind the CRI server when
	// that is another program: Docker Engine's, for cri-dockerd, whose
	// Version RPC answers RuntimeName "docker" and the Docker Engine's
	// version (core/docker_service.go, Version, at v0.4.0 and v0.4.4; seen
	// live: "20.10.24+dfsg1" from cri-dockerd 0.4.0 and 0.4.4). "" for
	// containerd and CRI-O, and when unknown.
	EngineVersion string
	// SandboxImage is the sandbox image exactly as the runtime reports it
	// (not normalized), "" when SandboxImageReported is false.
	SandboxImage string
	// SandboxImageReported reports whether the runtime reported a sandbox
	// image. containerd 2.x never does.
	SandboxImageReported bool
	// ContainerdEndpoint is containerd's own socket from
	// config.containerdEndpoint, "" for other runtimes.
	ContainerdEndpoint string
}

// isContainerdKey reports whether only containerd's CRI plugin reports the
// Info key k (1.6 and 2.2 both do, see testdata).
func isContainerdKey(k string) bool {
	return k == "lastCNILoadStatus" || k == "cniconfig"
}

// crioKey is the key of the object CRI-O 1.33.0 and later report inside
// "config", beside "sandboxImage". No CRI-O release reports it at the top
// level of Info: server/runtime_status.go returns only "config" from v1.27.0
// (the first with sandboxImage) to v1.36.3.
const crioKey = "crio"

// configKey is the Info key that holds the runtime's configuration.
const configKey = "config"

// facts collects what the scan found; info turns it into an Info.
type facts struct {
	sandbox    string
	reported   bool
	endpoint   string
	containerd bool // a containerd-only key or config field was seen
	crio       bool // a config.crio object was seen
}

func (f *facts) info() Info {
	in := Info{
		Runtime:              RuntimeUnknown,
		SandboxImage:         f.sandbox,
		SandboxImageReported: f.reported,
		ContainerdEndpoint:   f.endpoint,
	}
	switch {
	case f.containerd:
		in.Runtime = RuntimeContainerd
	case f.crio:
		in.Runtime = RuntimeCRIO
	}
	return in
}

// Parse reads the Info map of a CRI StatusResponse.
//
// A nil or empty map (a non-verbose Status) or a map without "config" is not
// an error: the result has SandboxImageReported false and Runtime
// RuntimeUnknown unless another key identifies the runtime. For example,
// Parse(map[string]string{"config": `{"sandboxImage":"registry.k8s.io/pause:3.10"}`})
// reports "registry.k8s.io/pause:3.10" with Runtime RuntimeUnknown.
//
// Errors are [*ParseError] values whose Offset is inside the value of Key.
func Parse(info map[string]string) (Info, error) {
	var total int64
	for k, v := range info {
		total += int64(len(k)) + int64(len(v))
	}
	if total > MaxInputSize {
		return Info{}, &ParseError{Offset: total, Err: fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, total, MaxInputSize)}
	}
	var f facts
	// Visit keys in order so that the result and the error do not depend on
	// map iteration order.
	keys := make([]string, 0, len(info))
	for k := range info {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch {
		case k == configKey:
			if err := scanConfigString(info[k], 0, &f); err != nil {
				return Info{}, err
			}
		case isContainerdKey(k):
			f.containerd = true
		}
	}
	return f.info(), nil
}

// ParseJSON reads the output of `crictl info` (JSON, the default output
// format): an object with "status", optionally "runtimeHandlers" and
// "features", and the Info keys, each embedded as JSON when its value is JSON
// and as a JSON string otherwise.
//
// A "config" that is a JSON string holding a JSON object is accepted too, so
// that the JSON encoding of the Info map itself (map[string]string) parses.
// The rules are otherwise those of [Parse]. Errors are [*ParseError] values
// whose Offset is inside the whole document.
func ParseJSON(b []byte) (Info, error) {
	if len(b) > MaxInputSize {
		return Info{}, &ParseError{Offset: MaxInputSize, Err: fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(b), MaxInputSize)}
	}
	var f facts
	if err := scanDocument(b, &f); err != nil {
		return Info{}, err
	}
	return f.info(), nil
}
