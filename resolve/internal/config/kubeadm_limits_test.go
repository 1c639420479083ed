package config

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/sandboxpin/sandboxpin/resolve/internal/nodefs"
	"github.com/sandboxpin/sandboxpin/resolve/internal/yamlfile"
)

// Shapes of YAML documents, shared by the tests, FuzzKubeadmShapes and the
// benchmarks.

// yamlFlowSeq is a flow sequence nested depth deep at the root.
func yamlFlowSeq(depth int) string {
	return strings.Repeat("[", depth) + "x" + strings.Repeat("]", depth) + "\n"
}

// yamlFlowMap is a flow mapping nested depth deep at the root.
func yamlFlowMap(depth int) string {
	return strings.Repeat("{a: ", depth) + "x" + strings.Repeat("}", depth) + "\n"
}

// yamlBlockMap is a block mapping nested depth deep, indent columns a level.
func yamlBlockMap(depth, indent int) string {
	var b strings.Builder
	for i := range depth - 1 {
		fmt.Fprintf(&b, "%sk:\n", strings.Repeat(" ", i*indent))
	}
	fmt.Fprintf(&b, "%sk: x\n", strings.Repeat(" ", (depth-1)*indent))
	return b.String()
}

// yamlBlockSeq is a block sequence nested depth deep on one line.
func yamlBlockSeq(depth int) string { return strings.Repeat("- ", depth) + "x\n" }

// yamlLaughs is the "billion laughs": a list of width scalars, then levels
// lists of width aliases of the one before. It expands to about
// width^(levels+1) nodes.
func yamlLaughs(levels, width int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "l0: &l0 [%s]\n", strings.TrimSuffix(strings.Repeat("x, ", width), ", "))
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "l%d: &l%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d, ", i-1), width), ", "))
	}
	return b.String()
}

// yamlKeys is a block mapping of n keys.
func yamlKeys(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "key%d: value\n", i)
	}
	return b.String()
}

// yamlDocs is n small documents.
func yamlDocs(n int) string {
	return strings.Repeat("---\napiVersion: v1\nkind: Other\n", n)
}

// yamlAliases is an anchored list used n times.
func yamlAliases(n int) string {
	return "a: &a [1, 2]\nb: [" + strings.TrimSuffix(strings.Repeat("*a, ", n), ", ") + "]\n"
}

// utf16LE encodes s as UTF-16 with a byte order mark, as go-yaml reads it.
func utf16LE(s string) string {
	b := []byte{0xFF, 0xFE}
	for _, u := range utf16.Encode([]rune(s)) {
		b = binary.LittleEndian.AppendUint16(b, u)
	}
	return string(b)
}

// yamlLimitTests are documents at and past the limits, shared by
// TestKubeadmLimits and the fuzz seeds.
var yamlLimitTests = []struct {
	name     string
	content  string // kubeadm config file
	wantLine int    // line of the nodefs.ErrLimit, 0 for no limit error
}{
	{name: "flow sequence at the depth limit", content: yamlFlowSeq(yamlfile.MaxDepth)},
	{name: "flow sequence past the depth limit", content: yamlFlowSeq(yamlfile.MaxDepth + 1), wantLine: 1},
	{name: "flow mapping past the depth limit", content: "a: " + yamlFlowMap(yamlfile.MaxDepth), wantLine: 1},
	{name: "single-pair mappings at the depth limit", content: strings.Repeat("[a: ", yamlfile.MaxDepth/2) + "x" + strings.Repeat("]", yamlfile.MaxDepth/2)},
	{name: "single-pair mappings nest a level", content: strings.Repeat("[? a: ", yamlfile.MaxDepth/2+1) + "x" + strings.Repeat("]", yamlfile.MaxDepth/2+1), wantLine: 1},
	{name: "tagged empty nodes", content: "a: !t\nb: &x\nc: [!t , &y ]\n"},
	{name: "flow sequence over lines", content: "a:\n" + strings.Repeat(" [\n", yamlfile.MaxDepth) + strings.Repeat("]", yamlfile.MaxDepth) + "\n", wantLine: 2 + yamlfile.MaxDepth - 1},
	{name: "block mapping at the depth limit", content: yamlBlockMap(yamlfile.MaxDepth, 2)},
	{name: "block mapping past the depth limit", content: yamlBlockMap(yamlfile.MaxDepth+1, 1), wantLine: yamlfile.MaxDepth + 1},
	{name: "block sequence at the depth limit", content: yamlBlockSeq(yamlfile.MaxDepth)},
	{name: "block sequence past the depth limit", content: yamlBlockSeq(yamlfile.MaxDepth + 1), wantLine: 1},
	{name: "block and flow together", content: yamlBlockMap(60, 2) + strings.Repeat(" ", 118) + "k2: " + yamlFlowSeq(41), wantLine: 61},
	{name: "deep after a block scalar", content: "a: |\n  text\n   more\nb: " + yamlFlowSeq(yamlfile.MaxDepth), wantLine: 4},
	{name: "deep after a block scalar with indicators", content: "a:\n  b: >2-\n     text\n\n  c: " + yamlFlowSeq(yamlfile.MaxDepth), wantLine: 5},
	{name: "brackets in a block scalar", content: "a: |\n  " + strings.Repeat("[", 300) + "\n\n  '\"\nb: 1\n"},
	{name: "brackets in quoted scalars", content: "a: '" + strings.Repeat("[", 300) + "\n  it''s'\nb: \"\\\"" + strings.Repeat("{", 300) + "\"\n"},
	{name: "brackets in a comment", content: "a: 1 # " + strings.Repeat("[", 300) + "\n# '\nb: 2\n"},
	{name: "brackets in a multi-line plain scalar", content: "a: x\n  " + strings.Repeat("[", 300) + " 'y\nb: 2\n"},
	{name: "deep after a multi-line quoted scalar", content: "a: \"x\n  y\"\nb: " + yamlFlowSeq(yamlfile.MaxDepth), wantLine: 3},
	{name: "carriage returns alone break lines", content: strings.ReplaceAll(yamlBlockMap(yamlfile.MaxDepth+1, 1), "\n", "\r"), wantLine: 1},
	{name: "UTF-16", content: utf16LE(yamlFlowSeq(yamlfile.MaxDepth + 1)), wantLine: 1},
	{name: "billion laughs", content: yamlLaughs(9, 9), wantLine: 5},
	{name: "laughs wide", content: yamlLaughs(3, 40), wantLine: 3},
	{name: "a list used often", content: yamlAliases(yamlfile.MaxAnchors - 1)},
	{name: "too many aliases", content: yamlAliases(yamlfile.MaxAnchors), wantLine: 2},
	{name: "a long scalar aliased", content: "a: &a " + strings.Repeat("x", 4000) + "\nb: [" + strings.Repeat("*a, ", 300) + "]\n", wantLine: 2},
	{
		name:     "aliases nest deeper than their anchors",
		content:  "a: &a " + yamlFlowSeq(60) + "b: " + strings.Repeat("[", 50) + "*a" + strings.Repeat("]", 50) + "\n",
		wantLine: 2,
	},
	{name: "documents at the limit", content: yamlDocs(yamlfile.MaxDocuments)},
	{name: "too many documents", content: yamlDocs(yamlfile.MaxDocuments + 1), wantLine: 3*yamlfile.MaxDocuments + 2},
	{name: "empty documents do not count", content: strings.Repeat("---\n", 5000) + "a: 1\n"},
	{name: "too many keys", content: yamlKeys(yamlfile.MaxNodes / 2), wantLine: yamlfile.MaxNodes / 2},
	{name: "too many items", content: "a: [" + strings.Repeat("1, ", yamlfile.MaxNodes) + "]\n", wantLine: 1},
	{name: "kubeadm config", content: kubeadmFull},
}

// kubeadmFull is a complete kubeadm config, as `kubeadm config print
// init-defaults --component-configs KubeletConfiguration` prints it, with an
// anchor shared by two components.
const kubeadmFull = `apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
bootstrapTokens:
- groups:
  - system:bootstrappers:kubeadm:default-node-token
  token: abcdef.0123456789abcdef
  ttl: 24h0m0s
  usages: [signing, authentication]
localAPIEndpoint:
  advertiseAddress: 1.2.3.4
  bindPort: 6443
nodeRegistration:
  criSocket: unix:///var/run/containerd/containerd.sock
  imagePullPolicy: IfNotPresent
  name: node
  taints: null
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
apiServer:
  extraArgs: &args
  - name: profiling
    value: "false"
controllerManager:
  extraArgs: *args
scheduler:
  extraArgs: *args
certificatesDir: /etc/kubernetes/pki
clusterName: kubernetes
etcd:
  local:
    dataDir: /var/lib/etcd
imageRepository: registry.k8s.io
kubernetesVersion: 1.33.0
networking:
  dnsDomain: cluster.local
  serviceSubnet: 10.96.0.0/12
---
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
authentication:
  anonymous:
    enabled: false
  webhook:
    cacheTTL: 0s
    enabled: true
cgroupDriver: systemd
clusterDNS:
- 10.96.0.10
evictionHard: {memory.available: 100Mi, nodefs.available: 10%}
`

func TestKubeadmLimits(t *testing.T) {
	t.Parallel()
	for _, tt := range yamlLimitTests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := parseKubeadm("/"+kubeadmFile, []byte(tt.content))
			if tt.wantLine == 0 {
				assert.NotErrorIs(t, err, nodefs.ErrLimit)
				if strings.HasPrefix(tt.name, "kubeadm") {
					require.NoError(t, err)
					require.NotNil(t, cfg.ImageRepository)
					assert.Equal(t, 33, cfg.ImageRepository.Line)
				}
				return
			}
			require.ErrorIs(t, err, nodefs.ErrLimit)
			assert.ErrorIs(t, err, nodefs.ErrInvalidConfig)
			var ce *nodefs.ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, "/"+kubeadmFile, ce.Path)
			assert.Equal(t, tt.wantLine, ce.Line, "line of %v", err)
		})
	}
}

// TestKubeadmLimitsUpperBound checks that what the pre-scan counts is at
// least what go-yaml decodes, for the documents that pass it.
func TestKubeadmLimitsUpperBound(t *testing.T) {
	t.Parallel()
	for _, tt := range yamlLimitTests {
		if tt.wantLine == 0 {
			checkYAMLBound(t, []byte(strings.SplitN(tt.content, "\n---", 2)[0]))
		}
	}
}

// checkYAMLBound fails if the pre-scan of the single document b passes
// while go-yaml decodes more nodes, or deeper ones, than it counted.
func checkYAMLBound(t *testing.T, b []byte) {
	t.Helper()
	var f yamlfile.File
	_, st, err := f.Parse(b, 1)
	if err != nil {
		return
	}
	var v any
	if err := yaml.Unmarshal(b, &v); err != nil || v == nil {
		return // an error, or an empty document
	}
	nodes, depth := jsonShape(v)
	if nodes > st.Nodes || depth > st.Depth {
		t.Fatalf("go-yaml decodes %d nodes %d deep, the limits counted %d nodes %d deep, in %q",
			nodes, depth, st.Nodes, st.Depth, nodefs.Shorten(string(b)))
	}
}

// jsonShape returns the nodes of v and how deep its collections nest.
func jsonShape(v any) (nodes, depth int) {
	switch v := v.(type) {
	case map[string]any:
		nodes = 1
		for _, e := range v {
			n, d := jsonShape(e)
			nodes += 1 + n
			depth = max(depth, d)
		}
		return nodes, depth + 1
	case []any:
		nodes = 1
		for _, e := range v {
			n, d := jsonShape(e)
			nodes += n
			depth = max(depth, d)
		}
		return nodes, depth + 1
	}
	return 1, 0
}

// TestKubeadmLinear checks that parsing 10 times the input allocates at
// most 12 times as often. It is not parallel: AllocsPerRun refuses that.
func TestKubeadmLinear(t *testing.T) {
	tests := []struct {
		name  string
		shape func(n int) string // a document of about n units
		n     int                // units of the small input
	}{
		{name: "keys", shape: yamlKeys, n: 1000},
		{name: "documents", shape: yamlDocs, n: 50},
		{name: "flow items", shape: func(n int) string { return "a: [" + strings.Repeat("x, ", n) + "]\n" }, n: 2000},
		{name: "aliases", shape: yamlAliases, n: 50},
		{name: "block scalar lines", shape: func(n int) string { return "a: |\n" + strings.Repeat("  [' line\n", n) }, n: 1000},
		{name: "comment lines", shape: func(n int) string { return strings.Repeat("# [' comment\n", n) + "a: 1\n" }, n: 1000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			small, large := []byte(tt.shape(tt.n)), []byte(tt.shape(10*tt.n))
			for _, b := range [][]byte{small, large} {
				_, err := parseKubeadm("/x", b)
				require.NoError(t, err)
			}
			a1 := testing.AllocsPerRun(3, func() { _, _ = parseKubeadm("/x", small) })
			a10 := testing.AllocsPerRun(3, func() { _, _ = parseKubeadm("/x", large) })
			assert.LessOrEqual(t, a10, 12*a1, "allocations for %d units: %.0f, for %d: %.0f", tt.n, a1, 10*tt.n, a10)
		})
	}
}
