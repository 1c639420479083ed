package remedy

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/audit"
	"github.com/sandboxpin/sandboxpin/reference"
	"github.com/sandboxpin/sandboxpin/resolve"
)

var update = flag.Bool("update", false, "rewrite testdata/plans from the plans made")

// sampleNodes are resolve's sample nodes, and examples' node.
var sampleNodes = []string{"../resolve/testdata/nodes", "../examples/testdata"}

// sampleVersions reads resolve/testdata/nodes/versions.json: the versions
// each sample node is resolved with, by node.
func sampleVersions(t testing.TB, path string) map[string][]resolve.Options {
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

// copyTree copies the directory src to a new temporary directory.
func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	require.NoError(t, os.CopyFS(dst, os.DirFS(src)))
	return dst
}

// readTree returns every regular file under dir by its node path.
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	fsys := os.DirFS(dir)
	require.NoError(t, fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := fs.ReadFile(fsys, p)
		files["/"+p] = string(b)
		return err
	}))
	return files
}

// render writes a plan as the golden files hold it: each edit's diff,
// then the steps.
func render(p *Plan) string {
	var b strings.Builder
	for _, e := range p.Edits {
		for _, c := range e.Changes {
			fmt.Fprintf(&b, "# %s %v: %s\n", c.Origin(), c.Answers, c.Message)
		}
		b.WriteString(e.Diff)
	}
	for _, s := range p.Steps {
		alt := ""
		if s.Alternative {
			alt = " (alternative)"
		}
		fmt.Fprintf(&b, "step %s%s %s%s%s: %s\n", s.Action, alt, s.Component, prefixed(" ", s.Unit), prefixed(" ", s.Image), s.Message)
		for _, c := range s.Commands {
			fmt.Fprintf(&b, "  $ %s\n", c)
		}
		for _, alt := range s.Alternatives {
			b.WriteString("  or:\n")
			for _, c := range alt {
				fmt.Fprintf(&b, "  $ %s\n", c)
			}
		}
	}
	return b.String()
}

func prefixed(p, s string) string {
	if s == "" {
		return ""
	}
	return p + s
}

// TestSampleNodes plans every sample node (with the versions of its rows,
// and with no images and with the sandbox image stored only under its
// canonical name), checks the plan against its golden file, verifies it,
// applies it to a copy, and checks that the copy changed only in the
// planned files, that it resolves without the findings the plan answered,
// and that a second plan has no edit.
func TestSampleNodes(t *testing.T) {
	t.Parallel()
	var nodes []string
	versions := sampleVersions(t, sampleNodes[0]+"/versions.json")
	for _, dir := range sampleNodes {
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		for _, e := range entries {
			if e.IsDir() {
				nodes = append(nodes, filepath.Join(dir, e.Name()))
			}
		}
	}
	for _, node := range nodes {
		name := filepath.Base(node)
		rows, ok := versions[name]
		if filepath.Dir(node) != filepath.Clean(sampleNodes[0]) {
			rows, ok = []resolve.Options{{}}, true // the examples' nodes
		}
		require.True(t, ok, "sample node %s has no row in %s/versions.json", name, sampleNodes[0])
		for i, opts := range rows {
			for _, images := range []string{"", "canonical", "unpinned"} {
				t.Run(fmt.Sprintf("%s/%d/%s", name, i, images), func(t *testing.T) {
					t.Parallel()
					opts := opts // each subtest its own Root
					ctx := context.Background()
					dir := copyTree(t, node)
					orig := readTree(t, dir)
					opts.Root = resolve.DirFS(dir)
					res, err := resolve.Resolve(ctx, opts)
					if errors.Is(err, resolve.ErrNoSandboxImage) {
						t.Skip("the sandbox image cannot be told: fix exits 3")
					}
					require.NoError(t, err)
					var judge func(*resolve.Result) (*audit.Verdict, error)
					var v *audit.Verdict
					if images != "" {
						obs := audit.ListedObservation{Images: canonicalImages(t, res)}
						if images == "unpinned" {
							obs.Images = unpinnedImages(t, res)
						}
						judge = func(r *resolve.Result) (*audit.Verdict, error) { return audit.Judge(r, obs) }
						v, err = judge(res)
						require.NoError(t, err)
					}
					p, err := For(t.Context(), res, v, opts.Root)
					require.NoError(t, err)
					golden := filepath.Join("testdata", "plans", fmt.Sprintf("%s-%d%s.txt", name, i, prefixed("-", images)))
					got := render(p)
					if *update {
						require.NoError(t, os.MkdirAll(filepath.Dir(golden), 0o755)) //nolint:gosec // G301: a directory of the repository
						require.NoError(t, os.WriteFile(golden, []byte(got), 0o644)) //nolint:gosec // G306: a file of the repository
					}
					want, err := os.ReadFile(golden)
					require.NoError(t, err, "go test ./remedy -update writes it")
					require.Equal(t, string(want), got)

					require.NoError(t, Verify(ctx, p, opts, judge))
					require.Equal(t, orig, readTree(t, dir), "planning wrote")
					require.NoError(t, Apply(ctx, p, resolve.DirFS(dir), ApplyOptions{}))

					after := readTree(t, dir)
					for path, content := range after {
						if strings.HasPrefix(path, DefaultBackupDir+"/") {
							_, rel, _ := strings.Cut(strings.TrimPrefix(path, DefaultBackupDir+"/"), "/")
							require.Equal(t, orig["/"+rel], content, "backup of /%s", rel)
							continue
						}
						i := slices.IndexFunc(p.Edits, func(e Edit) bool { return e.Path == path })
						if i < 0 {
							require.Equal(t, orig[path], content, "%s changed but is not in the plan", path)
							continue
						}
						require.True(t, p.Edits[i].Changed)
						require.Equal(t, string(p.Edits[i].After), content)
					}
					for path := range orig {
						require.Contains(t, after, path, "%s was removed", path)
					}

					res2, err := resolve.Resolve(ctx, opts)
					require.NoError(t, err)
					var v2 *audit.Verdict
					if judge != nil {
						v2, err = judge(res2)
						require.NoError(t, err)
					}
					// The property of issue 51, on the node as written: the image
					// each component uses is the one before, or a fix's remedy of
					// it and not lower, and stored before the restart.
					require.NoError(t, keepsImages(p, res2, v2))
					p2, err := For(t.Context(), res2, v2, opts.Root)
					require.NoError(t, err)
					require.Empty(t, p2.Edits, "a second plan edits:\n%s", render(p2))
				})
			}
		}
	}
}

// canonicalImages is the sandbox image stored under the canonical form of
// its name, pinned ("canonical"); "unpinned" is the image stored under its
// configured name and not pinned.
func canonicalImages(t *testing.T, res *resolve.Result) []*audit.ListedImage {
	t.Helper()
	ref, err := res.Aliases().Parse(res.SandboxImage)
	if err != nil {
		return nil
	}
	return []*audit.ListedImage{{ID: "sha256:0123", RepoTags: []string{ref.String()}, Pinned: true}}
}

// unpinnedImages is the sandbox image stored as the runtime stores its
// configured name, not pinned: containerd and CRI-O store the canonical
// name, cri-dockerd (Docker) the name as written.
func unpinnedImages(t *testing.T, res *resolve.Result) []*audit.ListedImage {
	t.Helper()
	name := res.SandboxImage
	if plain, err := reference.Parse(name); err == nil && res.Runtime != "cri-dockerd" {
		name = plain.String()
	}
	return []*audit.ListedImage{{ID: "sha256:0123", RepoTags: []string{name}}}
}

// TestRootAsResolve checks that For, Apply and Sweep take the root as
// resolve.Resolve does (nil is DirFS("/")) and For a context first.
func TestRootAsResolve(t *testing.T) {
	t.Parallel()
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	clean := &resolve.Result{SandboxImage: "registry.k8s.io/pause:3.10.1"} // no fix: nothing is read
	tests := []struct {
		name    string
		call    func() error
		wantErr error // nil for none
	}{
		{name: "For: nil root is /", call: func() error { _, err := For(t.Context(), clean, nil, nil); return err }},
		{name: "For: canceled", call: func() error { _, err := For(canceled, clean, nil, nil); return err }, wantErr: context.Canceled},
		{name: "Apply: no DirFS", call: func() error {
			return Apply(t.Context(), &Plan{}, fstest.MapFS{}, ApplyOptions{})
		}, wantErr: resolve.ErrNoRoot},
		{name: "Sweep: no DirFS", call: func() error { _, err := Sweep(t.Context(), fstest.MapFS{}); return err }, wantErr: resolve.ErrNoRoot},
		{name: "Apply: DirFS", call: func() error {
			return Apply(t.Context(), &Plan{}, resolve.DirFS(t.TempDir()), ApplyOptions{})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.call()
			if tt.wantErr == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tt.wantErr)
		})
	}
}

// TestStepCommandsSequence: a step's Commands are a sequence, every one to
// run (issue 52): a pull step whose image is stored under another name
// pulls in Commands and tags only in Alternatives, so a tool that runs
// Commands in order never pulls and tags. The nodes are sample nodes whose
// sandbox image is stored, unpinned, under its alias.
func TestStepCommandsSequence(t *testing.T) {
	t.Parallel()
	tests := []struct {
		node string // a sample node of the examples
		tag  string // the command that tags the stored image
	}{
		{node: "../examples/testdata/node", tag: "ctr -n k8s.io images tag k8s.gcr.io/pause:3.10.1 registry.k8s.io/pause:3.10.1"},
		{node: "../examples/testdata/crio-node", tag: "podman tag k8s.gcr.io/pause:3.10.1 registry.k8s.io/pause:3.10.1"},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.node), func(t *testing.T) {
			t.Parallel()
			opts := resolve.Options{Root: resolve.DirFS(copyTree(t, tt.node))}
			res, err := resolve.Resolve(t.Context(), opts)
			require.NoError(t, err)
			v, err := audit.Judge(res, audit.ListedObservation{Images: unpinnedImages(t, res)})
			require.NoError(t, err)
			p, err := For(t.Context(), res, v, opts.Root)
			require.NoError(t, err)
			var pulls int
			for _, s := range p.Steps {
				if s.Action != resolve.ActionPull {
					continue
				}
				pulls++
				assert.Equal(t, []string{"crictl pull " + s.Image}, s.Commands, "the pull step's sequence")
				assert.Equal(t, [][]string{{tt.tag}}, s.Alternatives, "the tag, instead of the pull")
			}
			assert.Equal(t, 1, pulls, "pull steps in %s", render(p))
		})
	}
}
