package criinfo

import (
	"fmt"
	"strings"
)

// Inputs shared by the tests, the fuzz seeds and the benchmarks.

// containerd16Config and containerd22Config are shortened forms of the
// "config" values in testdata/containerd-*-status-info.json.
const (
	containerd16Config = `{"containerd":{"snapshotter":"native","runtimes":{"runc":{"options":{"SystemdCgroup":false}}}},"streamServerPort":"0","sandboxImage":"registry.k8s.io/pause:3.10.1","maxConcurrentDownloads":3,"containerdRootDir":"/var/lib/containerd","containerdEndpoint":"/run/containerd/containerd.sock"}`
	containerd22Config = `{"containerd":{"defaultRuntimeName":"runc","runtimes":{"runc":{"options":{"SystemdCgroup":true}}}},"cdiSpecDirs":["/etc/cdi","/var/run/cdi"],"ignoreDeprecationWarnings":null,"containerdRootDir":"/var/lib/containerd","containerdEndpoint":"/run/containerd/containerd.sock"}`
	cniStatus          = "cni config load failed: no network config found in /etc/cni/net.d: cni plugin not initialized: failed to load cni config"
)

// nested returns n opening brackets of JSON arrays, closed, as an Info value.
func nested(n int) string {
	return strings.Repeat("[", n) + strings.Repeat("]", n)
}

// zeros returns n zeros separated by commas: n JSON tokens in 2n-1 bytes.
func zeros(n int) string {
	return strings.TrimSuffix(strings.Repeat("0,", n), ",")
}

// members returns a config object of n members "k00000":0, 11 bytes each
// with its comma: member i's value starts at offset 11*i+9.
func members(n int) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"k%05d":0`, i)
	}
	b.WriteByte('}')
	return b.String()
}

// parseTests are Info maps with the answer Parse must give.
var parseTests = []struct {
	name       string
	in         map[string]string // StatusResponse.Info
	want       Info              // expected result when wantErr is nil
	wantErr    error             // sentinel expected with errors.Is, or nil
	wantKey    string            // ParseError.Key when wantErr is set
	wantOffset int64             // ParseError.Offset when wantErr is set
	parseOnly  bool              // ParseJSON scans every key, so the crictl form fails
}{
	{name: "nil map", in: nil, want: Info{Runtime: RuntimeUnknown}},
	{name: "empty map", in: map[string]string{}, want: Info{Runtime: RuntimeUnknown}},
	{
		name: "containerd 1.6",
		in:   map[string]string{"config": containerd16Config, "golang": `"go1.19.8"`, "lastCNILoadStatus": cniStatus, "cniconfig": `{"PluginDirs":["/opt/cni/bin"]}`},
		want: Info{Runtime: RuntimeContainerd, SandboxImage: "registry.k8s.io/pause:3.10.1", SandboxImageReported: true, ContainerdEndpoint: "/run/containerd/containerd.sock"},
	},
	{
		name: "containerd 2.2 reports no sandbox image",
		in:   map[string]string{"config": containerd22Config, "lastCNILoadStatus": cniStatus},
		want: Info{Runtime: RuntimeContainerd, ContainerdEndpoint: "/run/containerd/containerd.sock"},
	},
	{
		name: "containerd without config",
		in:   map[string]string{"lastCNILoadStatus": "OK"},
		want: Info{Runtime: RuntimeContainerd},
	},
	{
		name: "containerd root dir only",
		in:   map[string]string{"config": `{"containerdRootDir":"/var/lib/containerd"}`},
		want: Info{Runtime: RuntimeContainerd},
	},
	{
		name: "cri-o or cri-dockerd",
		in:   map[string]string{"config": `{"sandboxImage":"registry.k8s.io/pause:3.10"}`},
		want: Info{Runtime: RuntimeUnknown, SandboxImage: "registry.k8s.io/pause:3.10", SandboxImageReported: true},
	},
	{
		name: "cri-o 1.33+ with config.crio",
		in:   map[string]string{"config": `{"sandboxImage":"pause:3.10","crio":{"image":{"pinned_images":["k8s.gcr.io/*"]}}}`},
		want: Info{Runtime: RuntimeCRIO, SandboxImage: "pause:3.10", SandboxImageReported: true},
	},
	{
		name: "config.crio that is not an object",
		in:   map[string]string{"config": `{"sandboxImage":"pause:3.10","crio":"x"}`},
		want: Info{Runtime: RuntimeUnknown, SandboxImage: "pause:3.10", SandboxImageReported: true},
	},
	{
		name: "a top-level crio key identifies nothing",
		in:   map[string]string{"config": `{"sandboxImage":"pause:3.10"}`, "crio": `{"image":{}}`},
		want: Info{Runtime: RuntimeUnknown, SandboxImage: "pause:3.10", SandboxImageReported: true},
	},
	{
		name: "sandbox image kept raw",
		in:   map[string]string{"config": " \n{ \"sandboxImage\" : \"K8S.GCR.IO/Pause\" } \n"},
		want: Info{Runtime: RuntimeUnknown, SandboxImage: "K8S.GCR.IO/Pause", SandboxImageReported: true},
	},
	{
		name: "escapes in sandbox image",
		in:   map[string]string{"config": `{"sandboxImage":"registry.k8s.io\/pause:3.10\u0021"}`},
		want: Info{Runtime: RuntimeUnknown, SandboxImage: "registry.k8s.io/pause:3.10!", SandboxImageReported: true},
	},
	{name: "empty config object", in: map[string]string{"config": `{}`}, want: Info{Runtime: RuntimeUnknown}},
	{
		name: "non-string endpoint is skipped",
		in:   map[string]string{"config": `{"containerdEndpoint":{"a":[1,2]},"sandboxImage":"p:1"}`},
		want: Info{Runtime: RuntimeUnknown, SandboxImage: "p:1", SandboxImageReported: true},
	},
	{
		name: "sandboxImage below the top level is not the sandbox image",
		in:   map[string]string{"config": `{"containerd":{"sandboxImage":"x:1"}}`},
		want: Info{Runtime: RuntimeUnknown},
	},
	{
		name: "other keys are not read",
		in:   map[string]string{"lastCNILoadStatus.default": "{{{", "golang": "[1,", "x": "\xff"},
		want: Info{Runtime: RuntimeUnknown},
	},
	{
		name:      "deep other keys are not read",
		in:        map[string]string{"golang": nested(10000)},
		want:      Info{Runtime: RuntimeUnknown},
		parseOnly: true,
	},
	{
		name: "nesting at the limit",
		in:   map[string]string{"config": `{"a":` + nested(MaxDepth-1) + `}`},
		want: Info{Runtime: RuntimeUnknown},
		// crictl embeds config one level down: one level too many.
		parseOnly: true,
	},

	{name: "config empty", in: map[string]string{"config": ""}, wantErr: ErrInvalidInfo, wantKey: "config", wantOffset: 0},
	{name: "config not json", in: map[string]string{"config": "sandboxImage=pause"}, wantErr: ErrInvalidInfo, wantKey: "config", wantOffset: 1},
	{name: "config array", in: map[string]string{"config": `[{"sandboxImage":"p:1"}]`}, wantErr: ErrInvalidInfo, wantKey: "config", wantOffset: 0},
	{name: "config string", in: map[string]string{"config": ` "p:1"`}, wantErr: ErrInvalidInfo, wantKey: "config", wantOffset: 1},
	{name: "config null", in: map[string]string{"config": `null`}, wantErr: ErrInvalidInfo, wantKey: "config", wantOffset: 0},
	{name: "sandboxImage number", in: map[string]string{"config": `{"sandboxImage": 3}`}, wantErr: ErrInvalidInfo, wantKey: "config", wantOffset: 17},
	{name: "sandboxImage null", in: map[string]string{"config": `{"sandboxImage":null}`}, wantErr: ErrInvalidInfo, wantKey: "config", wantOffset: 16},
	{name: "sandboxImage array", in: map[string]string{"config": `{"a":1,"sandboxImage":["p:1"]}`}, wantErr: ErrInvalidInfo, wantKey: "config", wantOffset: 22},
	{name: "sandboxImage object", in: map[string]string{"config": `{"sandboxImage":{}}`}, wantErr: ErrInvalidInfo, wantKey: "config", wantOffset: 16},
	{name: "sandboxImage empty", in: map[string]string{"config": `{"sandboxImage":""}`}, wantErr: ErrInvalidInfo, wantKey: "config", wantOffset: 16},
	{name: "duplicate sandboxImage", in: map[string]string{"config": `{"sandboxImage":"a:1","sandboxImage":"b:1"}`}, wantErr: ErrInvalidInfo, wantKey: "config", wantOffset: 22},
	{name: "duplicate other key", in: map[string]string{"config": `{"x":1,"x":2}`}, wantErr: ErrInvalidInfo, wantKey: "config", wantOffset: 7},
	{name: "truncated", in: map[string]string{"config": `{"sandboxImage":"p:1"`}, wantErr: ErrInvalidInfo, wantKey: "config", wantOffset: 21},
	{name: "truncated string", in: map[string]string{"config": `{"sandboxImage":"p:1`}, wantErr: ErrInvalidInfo, wantKey: "config", wantOffset: 16},
	{name: "trailing data", in: map[string]string{"config": `{} x`}, wantErr: ErrInvalidInfo, wantKey: "config", wantOffset: 3},
	{name: "two objects", in: map[string]string{"config": `{}{}`}, wantErr: ErrInvalidInfo, wantKey: "config", wantOffset: 2},
	{name: "bad literal", in: map[string]string{"config": `{"a":tru}`}, wantErr: ErrInvalidInfo, wantKey: "config", wantOffset: 7},
	{name: "too deep", in: map[string]string{"config": `{"a":` + nested(MaxDepth) + `}`}, wantErr: ErrTooDeep, wantKey: "config", wantOffset: 5 + MaxDepth - 1},
	{name: "very deep", in: map[string]string{"config": strings.Repeat(`{"a":`, 100000)}, wantErr: ErrTooDeep, wantKey: "config", wantOffset: 5 * MaxDepth},
	{name: "too large", in: map[string]string{"config": `{}`, "x": strings.Repeat("a", MaxInputSize)}, wantErr: ErrTooLarge, wantKey: "", wantOffset: MaxInputSize + 9},
	// '{', "a", '[' and MaxTokens-5 zeros, ']', '}': MaxTokens tokens; the
	// crictl document around it has 3 more.
	{name: "as many tokens as allowed", in: map[string]string{"config": `{"a":[` + zeros(MaxTokens-5) + `]}`}, want: Info{Runtime: RuntimeUnknown}, parseOnly: true},
	// Token MaxTokens+1 is zero number MaxTokens-3, at 6+2*(MaxTokens-3).
	{name: "too many tokens", in: map[string]string{"config": `{"a":[` + zeros(MaxTokens) + `]}`}, wantErr: ErrTooLarge, wantKey: "config", wantOffset: 2 * MaxTokens},
	// Token MaxTokens+1 is the value of member MaxTokens/2-1.
	{name: "too many members", in: map[string]string{"config": members(MaxTokens)}, wantErr: ErrTooLarge, wantKey: "config", wantOffset: 11*(MaxTokens/2-1) + 10},
}

// parseJSONTests are `crictl info` documents with the answer ParseJSON must give.
var parseJSONTests = []struct {
	name       string
	in         string // crictl info output
	want       Info   // expected result when wantErr is nil
	wantErr    error  // sentinel expected with errors.Is, or nil
	wantKey    string // ParseError.Key when wantErr is set
	wantOffset int64  // ParseError.Offset when wantErr is set
}{
	{name: "empty object", in: `{}`, want: Info{Runtime: RuntimeUnknown}},
	{
		name: "non-verbose",
		in:   `{"status":{"conditions":[{"type":"RuntimeReady","status":true}]},"runtimeHandlers":[{"name":"runc"}],"features":{}}`,
		want: Info{Runtime: RuntimeUnknown},
	},
	{
		name: "containerd 1.6",
		in:   `{"status":{},"config":` + containerd16Config + `,"golang":"go1.19.8","lastCNILoadStatus":"` + cniStatus + `"}`,
		want: Info{Runtime: RuntimeContainerd, SandboxImage: "registry.k8s.io/pause:3.10.1", SandboxImageReported: true, ContainerdEndpoint: "/run/containerd/containerd.sock"},
	},
	{
		name: "containerd 2.2",
		in:   `{"config":` + containerd22Config + `}`,
		want: Info{Runtime: RuntimeContainerd, ContainerdEndpoint: "/run/containerd/containerd.sock"},
	},
	{
		name: "cri-o",
		in:   `{"status":{"conditions":[]},"config":{"sandboxImage":"registry.k8s.io/pause:3.10","crio":{"image":{}}}}`,
		want: Info{Runtime: RuntimeCRIO, SandboxImage: "registry.k8s.io/pause:3.10", SandboxImageReported: true},
	},
	{
		name: "info map encoded as JSON",
		in:   `{"config":"{\"sandboxImage\":\"registry.k8s.io/pause:3.9\"}","lastCNILoadStatus":"OK"}`,
		want: Info{Runtime: RuntimeContainerd, SandboxImage: "registry.k8s.io/pause:3.9", SandboxImageReported: true},
	},
	{
		name: "nesting at the limit",
		in:   `{"status":` + nested(MaxDepth-1) + `}`,
		want: Info{Runtime: RuntimeUnknown},
	},

	{name: "empty input", in: ``, wantErr: ErrInvalidInfo, wantOffset: 0},
	{name: "white space", in: " \n", wantErr: ErrInvalidInfo, wantOffset: 2},
	{name: "top-level array", in: `[{"config":{}}]`, wantErr: ErrInvalidInfo, wantOffset: 0},
	{name: "top-level null", in: ` null`, wantErr: ErrInvalidInfo, wantOffset: 1},
	{name: "config number", in: `{"config": 1}`, wantErr: ErrInvalidInfo, wantKey: "config", wantOffset: 11},
	{name: "config array", in: `{"config":[]}`, wantErr: ErrInvalidInfo, wantKey: "config", wantOffset: 10},
	{name: "config plain string", in: `{"config":"not json"}`, wantErr: ErrInvalidInfo, wantKey: "config", wantOffset: 10},
	{name: "config string with bad image", in: `{"config":"{\"sandboxImage\":1}"}`, wantErr: ErrInvalidInfo, wantKey: "config", wantOffset: 10},
	{name: "sandboxImage number", in: `{"status":{},"config":{"sandboxImage":1.5}}`, wantErr: ErrInvalidInfo, wantKey: "config", wantOffset: 38},
	{name: "sandboxImage false", in: `{"config":{"sandboxImage":false}}`, wantErr: ErrInvalidInfo, wantKey: "config", wantOffset: 26},
	{name: "duplicate config", in: `{"config":{},"config":{"sandboxImage":"p:1"}}`, wantErr: ErrInvalidInfo, wantOffset: 13},
	{name: "duplicate status", in: `{"status":{},"status":{}}`, wantErr: ErrInvalidInfo, wantOffset: 13},
	{name: "truncated", in: `{"config":{"sandboxImage":"p:1"}`, wantErr: ErrInvalidInfo, wantOffset: 32},
	{name: "truncated in status", in: `{"status":{"conditions":[`, wantErr: ErrInvalidInfo, wantKey: "status", wantOffset: 25},
	{name: "trailing data", in: `{} {}`, wantErr: ErrInvalidInfo, wantOffset: 3},
	{name: "bad syntax in other key", in: `{"golang":go1}`, wantErr: ErrInvalidInfo, wantKey: "golang", wantOffset: 9},
	{name: "too deep in status", in: `{"status":` + nested(MaxDepth) + `}`, wantErr: ErrTooDeep, wantKey: "status", wantOffset: 10 + MaxDepth - 1},
	{name: "too deep in config", in: `{"config":{"a":` + nested(MaxDepth) + `}}`, wantErr: ErrTooDeep, wantKey: "config", wantOffset: 15 + MaxDepth - 2},
	{name: "too large", in: `{"x":"` + strings.Repeat("a", MaxInputSize) + `"}`, wantErr: ErrTooLarge, wantOffset: MaxInputSize},
	// Token MaxTokens+1 is zero number MaxTokens-3, at 11+2*(MaxTokens-3).
	{name: "too many tokens in status", in: `{"status":[` + zeros(MaxTokens) + `]}`, wantErr: ErrTooLarge, wantKey: "status", wantOffset: 2*MaxTokens + 5},
}
