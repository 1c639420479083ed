// Package samplenodes runs the examples and the sandboxpin command on the
// same sample nodes and images, for the tests that require them to agree:
// every node tree under resolve/testdata/nodes, with the versions
// cmd/sandboxpin's tests resolve it with (sampleNodeOptions in
// library_agree_test.go), and this module's testdata/node.
package samplenodes

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/audit"
	"github.com/sandboxpin/sandboxpin/resolve"
)

// The node trees, from an example's directory.
const (
	nodesDir    = "../../resolve/testdata/nodes"
	exampleNode = "../testdata/node"
)

// ShippedImages is `crictl images -o json` captured from containerd 1.6.20
// (seven images, none pinned), from an example's directory.
const ShippedImages = "../testdata/crictl-images.json"

// versions reads resolve/testdata/nodes/versions.json: the versions
// each sample node is resolved with, by node.
func versions(t testing.TB, path string) map[string][]resolve.Options {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var rows map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(b, &rows))
	out := map[string][]resolve.Options{}
	for node, raw := range rows {
		if node == "//" {
			continue
		}
		var runs []map[string]string
		require.NoError(t, json.Unmarshal(raw, &runs), "%s: %s", path, node)
		for _, r := range runs {
			out[node] = append(out[node], resolve.Options{RuntimeVersion: r["runtime-version"], KubeletVersion: r["kubelet-version"],
				KubeadmVersion: r["kubeadm-version"], KubeadmConfigPath: r["kubeadm-config"]})
		}
	}
	return out
}

// Node is one sample node with one set of the versions it is resolved with.
type Node struct {
	Name string          // the directory's name
	Root string          // its path from an example's directory
	Opts resolve.Options // the versions, and Root
}

// All returns every sample node with each of its versions; it fails t for
// a node under resolve/testdata/nodes that has no row.
func All(t testing.TB) []Node {
	t.Helper()
	entries, err := os.ReadDir(nodesDir)
	require.NoError(t, err)
	options := versions(t, nodesDir+"/versions.json")
	nodes := []Node{{Name: "examples-testdata-node", Root: exampleNode}, {Name: "examples-testdata-node", Root: exampleNode, Opts: resolve.Options{KubeadmVersion: "v1.34.1"}}}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		rows, ok := options[e.Name()]
		require.True(t, ok, "sample node %s has no row in %s/versions.json", e.Name(), nodesDir)
		for _, o := range rows {
			nodes = append(nodes, Node{Name: e.Name(), Root: filepath.Join(nodesDir, e.Name()), Opts: o})
		}
	}
	for i := range nodes {
		nodes[i].Opts.Root = resolve.DirFS(nodes[i].Root)
	}
	return nodes
}

// String names the node and its versions, for subtests.
func (n Node) String() string { return n.Name + "/" + strings.Join(n.VersionArgs(), " ") }

// VersionArgs are the flags for n's versions, as sandboxpin and the
// examples take them.
func (n Node) VersionArgs() []string {
	var args []string
	for _, f := range []struct{ flag, v string }{
		{"--runtime-version", n.Opts.RuntimeVersion}, {"--kubelet-version", n.Opts.KubeletVersion},
		{"--kubeadm-version", n.Opts.KubeadmVersion}, {"--kubeadm-config", n.Opts.KubeadmConfigPath},
	} {
		if f.v != "" {
			args = append(args, f.flag, f.v)
		}
	}
	return args
}

// Resolve resolves n through the library, as the examples and sandboxpin
// do; a result without a sandbox image comes with an error wrapping
// resolve.ErrNoSandboxImage.
func (n Node) Resolve(t testing.TB) (*resolve.Result, error) {
	t.Helper()
	res, err := resolve.Resolve(context.Background(), n.Opts)
	if err != nil && !errors.Is(err, resolve.ErrNoSandboxImage) {
		require.NoError(t, err, "%s", n)
	}
	return res, err
}

// Images are lists of images a runtime could store on a node whose sandbox
// image is img, as `crictl images -o json` files under t.TempDir(), by what
// each shows: the shipped capture with img stored as configured and
// unpinned, the same pinned, and img stored only under another spelling,
// pinned; each file beside the images of prepull (not pinned).
func Images(t testing.TB, img string, prepull []string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(ShippedImages)
	require.NoError(t, err)
	shipped, err := audit.ReadImages(bytes.NewReader(b))
	require.NoError(t, err)
	id := func(i int) string { return fmt.Sprintf("sha256:%064x", i) }
	var extra []*audit.ListedImage
	for i, p := range prepull {
		if p != img {
			extra = append(extra, &audit.ListedImage{ID: id(100 + i), RepoTags: []string{p}})
		}
	}
	lists := map[string][]*audit.ListedImage{
		"as configured, unpinned": {{ID: id(1), RepoTags: []string{img}}},
		"as configured, pinned":   {{ID: id(1), RepoTags: []string{img}, Pinned: true}},
	}
	if other := otherSpelling(img); other != "" {
		lists["only as "+other+", pinned"] = []*audit.ListedImage{{ID: id(1), RepoTags: []string{other}, Pinned: true}}
	}
	files := map[string]string{}
	dir := t.TempDir()
	for what, list := range lists {
		list = append(append(list, extra...), shipped...)
		b, err := json.Marshal(map[string]any{"images": list})
		require.NoError(t, err)
		f := filepath.Join(dir, fmt.Sprintf("images-%d.json", len(files)))
		require.NoError(t, os.WriteFile(f, b, 0o600))
		files[what] = f
	}
	return files
}

// otherSpelling returns another name of img under the default aliases or
// Docker Hub's forms, "" when none differs.
func otherSpelling(img string) string {
	for _, swap := range [][2]string{{"registry.k8s.io/", "k8s.gcr.io/"}, {"k8s.gcr.io/", "registry.k8s.io/"}} {
		if rest, ok := strings.CutPrefix(img, swap[0]); ok {
			return swap[1] + rest
		}
	}
	if rest, ok := strings.CutPrefix(img, "docker.io/library/"); ok {
		return rest
	}
	if first, _, _ := strings.Cut(img, "/"); strings.ContainsAny(first, ".:") || first == "localhost" || strings.Contains(img, "$") {
		return "" // has a domain (other than Docker Hub's short form), or is no reference
	}
	if !strings.Contains(img, "/") {
		return "docker.io/library/" + img
	}
	return "docker.io/" + img
}

// Run runs bin with args and stdin from the file in (none when ""), with
// env added, and returns its exit code and output.
func Run(t testing.TB, env []string, in, bin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	if in != "" {
		f, err := os.Open(in)
		require.NoError(t, err)
		defer f.Close()
		cmd.Stdin = f
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), out.String(), errOut.String()
	}
	require.NoError(t, err, "%s %s", bin, strings.Join(args, " "))
	return 0, out.String(), errOut.String()
}

// Sandboxpin returns the sandboxpin command, built once per test binary
// from the workspace (go.work ties cmd to this module). Under -short, and so
// when each module is tested alone, it skips t.
func Sandboxpin(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: sandboxpin is built from the workspace")
	}
	bin, err := build()
	require.NoError(t, err)
	return bin
}

// binDir holds the built command, "" until it is built.
var binDir string

var build = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "samplenodes")
	if err != nil {
		return "", err
	}
	binDir = dir
	bin := filepath.Join(dir, "sandboxpin")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/sandboxpin/sandboxpin/cmd/sandboxpin").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build sandboxpin: %w\n%s", err, out)
	}
	return bin, nil
})

// Main is an example's TestMain. With env (NAME=VALUE) in its environment
// the test binary runs main instead of the tests, so that the tests can
// run the program as its users do (Run with env and os.Args[0]);
// otherwise it runs the tests and removes the command Sandboxpin built.
func Main(m *testing.M, env string, main func()) {
	if slices.Contains(os.Environ(), env) {
		main()
		os.Exit(0)
	}
	code := m.Run()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// Keys returns m's keys in order, for stable subtests.
func Keys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
