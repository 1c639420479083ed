package remedy

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/audit"
	"github.com/sandboxpin/sandboxpin/resolve"
)

var update = flag.Bool("update", false, "rewrite testdata/plans from the plans made")

// sampleNodes are resolve's sample nodes, and examples' node.
var sampleNodes = []string{"../resolve/testdata/nodes", "../examples/testdata"}

// nodeOptions are the versions each sample node is planned with (those of
// resolve's TestResolveNodes); every sample node must have a row.
var nodeOptions = map[string][]resolve.Options{
	"containerd-1.6-v2":                {{RuntimeVersion: "1.6.20", KubeadmVersion: "v1.26.15"}},
	"containerd-1.6-debian-dpkg":       {{}},
	"containerd-1.7-alias":             {{RuntimeVersion: "v1.7.20", KubeadmVersion: "v1.28.4"}},
	"containerd-2.2-v3-imports":        {{RuntimeVersion: "2.2.9", KubeadmVersion: "v1.34.1", KubeadmConfigPath: "/etc/kubernetes/kubeadm.yaml"}},
	"containerd-2.2-v3-ignored-v2-key": {{RuntimeVersion: "v2.2.9"}},
	"containerd-2.3-v4-default":        {{}, {RuntimeVersion: "2.4.2"}},
	"containerd-2.3-v3-migrated":       {{RuntimeVersion: "v2.3.7"}, {RuntimeVersion: "2.2.9"}, {}},
	"containerd-2.4-v4-ignored-v2-key": {{RuntimeVersion: "2.4.2"}, {RuntimeVersion: "2.2.9"}},
	"containerd-2.0-v2-migrated":       {{RuntimeVersion: "2.0.5"}},
	"containerd-2.3.3-short":           {{RuntimeVersion: "2.3.3"}, {RuntimeVersion: "2.4.2"}},
	"k3s":                              {{}, {RuntimeVersion: "2.4.2"}},
	"crio-dropins":                     {{RuntimeVersion: "1.31.3", KubeadmVersion: "v1.31.3"}},
	"cri-dockerd":                      {{KubeletVersion: "v1.35.0"}},
	"kubelet-flag-dropin": {
		{RuntimeVersion: "2.4.2", KubeletVersion: "1.35.0", KubeadmConfigPath: "/etc/kubernetes/kubeadm.yaml"},
		{RuntimeVersion: "2.4.2", KubeletVersion: "1.33.0", KubeadmConfigPath: "/etc/kubernetes/kubeadm.yaml"},
		{RuntimeVersion: "2.4.2"},
	},
	"kubeadm-mirror":           {{RuntimeVersion: "1.7.22", KubeadmVersion: "v1.30.3", KubeadmConfigPath: "etc/kubernetes/kubeadm.yaml"}},
	"two-runtimes":             {{}},
	"digest":                   {{KubeadmVersion: "v1.31.0"}},
	"cri-dockerd-0.4.7-pinned": {{RuntimeVersion: "0.4.7"}, {}},
	"kubeadm-1.36-flag":        {{RuntimeVersion: "2.4.2", KubeadmVersion: "v1.36.0", KubeletVersion: "v1.36.0"}},
	"crio-1.37-kubeadm-1.37":   {{RuntimeVersion: "1.37.0", KubeadmVersion: "v1.37.2"}},
	"containerd-2.2-eol":       {{RuntimeVersion: "2.2.10", KubeletVersion: "v1.34.3"}},
	"node":                     {{}},
	"crio-node":                {{}},
	"debian-node":              {{}},
	"node-clean":               {{}},
}

// copyTree copies the directory src to a new temporary directory.
func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(out, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(l, out)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fi, _ := d.Info()
		return os.WriteFile(out, b, fi.Mode().Perm())
	})
	require.NoError(t, err)
	return dst
}

// readTree returns every regular file under dir by its slash path.
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		files["/"+filepath.ToSlash(rel)] = string(b)
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
		fmt.Fprintf(&b, "step %s %s%s%s: %s\n", s.Action, s.Component, prefixed(" ", s.Unit), prefixed(" ", s.Image), s.Message)
		for _, c := range s.Commands {
			fmt.Fprintf(&b, "  $ %s\n", c)
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
	var nodes []string
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
		rows, ok := nodeOptions[name]
		require.True(t, ok, "sample node %s has no row in nodeOptions", name)
		for i, opts := range rows {
			for _, images := range []string{"", "canonical"} {
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
						obs := audit.Observation[*audit.ListedImage]{Images: canonicalImages(t, res)}
						judge = func(r *resolve.Result) (*audit.Verdict, error) { return audit.Judge(r, obs) }
						v, err = judge(res)
						require.NoError(t, err)
					}
					p, err := For(res, v, opts.Root)
					require.NoError(t, err)
					golden := filepath.Join("testdata", "plans", fmt.Sprintf("%s-%d%s.txt", name, i, prefixed("-", images)))
					got := render(p)
					if *update {
						require.NoError(t, os.MkdirAll(filepath.Dir(golden), 0o755))
						require.NoError(t, os.WriteFile(golden, []byte(got), 0o644))
					}
					want, err := os.ReadFile(golden)
					require.NoError(t, err, "go test ./remedy -update writes it")
					require.Equal(t, string(want), got)

					require.NoError(t, Verify(ctx, p, opts, judge))
					require.Equal(t, orig, readTree(t, dir), "planning wrote")
					require.NoError(t, Apply(ctx, p, dir, ApplyOptions{}))

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
					p2, err := For(res2, v2, opts.Root)
					require.NoError(t, err)
					require.Empty(t, p2.Edits, "a second plan edits:\n%s", render(p2))
				})
			}
		}
	}
}

// canonicalImages is the sandbox image stored under the canonical form of
// its name, pinned.
func canonicalImages(t *testing.T, res *resolve.Result) []*audit.ListedImage {
	t.Helper()
	ref, err := res.Aliases().Parse(res.SandboxImage)
	if err != nil {
		return nil
	}
	return []*audit.ListedImage{{ID: "sha256:0123", RepoTags: []string{ref.String()}, Pinned: true}}
}
