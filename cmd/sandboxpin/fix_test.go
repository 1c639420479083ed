package main

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sandboxpin/sandboxpin/criinfo/cri/fakecri"
	"github.com/sandboxpin/sandboxpin/remedy"
	"github.com/sandboxpin/sandboxpin/resolve"
)

// exampleNodes are the examples' node trees, planned with no versions.
const exampleNodes = "../../examples/testdata"

// copyNode copies the node tree src to a new temporary directory.
func copyNode(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	require.NoError(t, os.CopyFS(dst, os.DirFS(src)))
	return dst
}

// nodeFiles returns every regular file under dir by its node path.
func nodeFiles(t *testing.T, dir string) map[string]string {
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

// TestFixSampleNodes runs fix on a copy of every sample node, with the
// versions of its rows: without --write it exits 0 or 1 and changes no
// byte; --write leaves a node whose resolve shows none of the findings the
// edits answered and that differs from the original only in the edited
// files, the drop-ins the plan added and the backups; a second fix then
// has no edit, and exits 0 unless a step no edit answers remains.
func TestFixSampleNodes(t *testing.T) {
	t.Parallel()
	type node struct {
		dir  string
		opts []resolve.Options
	}
	var nodes []node
	versions := sampleVersions(t, sampleNodes+"/versions.json")
	for _, parent := range []string{sampleNodes, exampleNodes} {
		entries, err := os.ReadDir(parent)
		require.NoError(t, err)
		for _, e := range entries {
			if !e.IsDir() {
				continue
			}
			opts, ok := versions[e.Name()]
			if parent == exampleNodes {
				opts, ok = []resolve.Options{{}}, true
			}
			require.True(t, ok, "sample node %s has no row in versions.json", e.Name())
			nodes = append(nodes, node{filepath.Join(parent, e.Name()), opts})
		}
	}
	for _, n := range nodes {
		for _, opts := range n.opts {
			args := versionArgs(opts)
			t.Run(filepath.Base(n.dir)+"/"+strings.Join(args, " "), func(t *testing.T) {
				t.Parallel()
				root := copyNode(t, n.dir)
				orig := nodeFiles(t, root)
				fix := append([]string{"fix", "--root", root, "-o", "json"}, args...)

				code, out, errOut := runCmd(t, fix...)
				if code == exitUnknown {
					assert.Contains(t, errOut, "cannot tell")
					assert.Equal(t, orig, nodeFiles(t, root))
					return
				}
				require.Contains(t, []int{exitOK, exitCheck}, code, "%s%s", out, errOut)
				require.Equal(t, orig, nodeFiles(t, root), "fix without --write wrote")
				var plan remedy.Plan
				require.NoError(t, json.Unmarshal([]byte(out), &plan))
				assert.Equal(t, code == exitOK, len(plan.Edits) == 0 && len(plan.Steps) == 0)

				code, out, errOut = runCmd(t, append(fix, "--write")...)
				require.Contains(t, []int{exitOK, exitCheck}, code, "%s%s", out, errOut)
				var written remedy.Plan
				require.NoError(t, json.Unmarshal([]byte(out), &written))
				assert.Equal(t, len(plan.Edits), len(written.Edits))
				remains := false
				excused := map[resolve.Kind]bool{}
				for _, s := range written.Steps {
					excused[s.Answers] = true
					remains = remains || s.Action != resolve.ActionRestart
				}
				assert.Equal(t, remains, code == exitCheck, "--write exits 1 exactly when a step no edit answers remains")

				after := nodeFiles(t, root)
				if written.Backup == "" {
					_, err := os.Stat(filepath.Join(root, remedy.DefaultBackupDir))
					assert.ErrorIs(t, err, fs.ErrNotExist, "a backup directory without a backup")
				}
				for p, content := range after {
					if strings.HasPrefix(p, remedy.DefaultBackupDir+"/") {
						assert.True(t, strings.HasPrefix(p, written.Backup+"/"), "%s: not under the run's backup directory %q", p, written.Backup)
						continue
					}
					i := slices.IndexFunc(written.Edits, func(e remedy.Edit) bool { return e.Path == p })
					if i < 0 {
						assert.Equal(t, orig[p], content, "%s changed but the plan does not edit it", p)
						continue
					}
					assert.True(t, written.Edits[i].Changed, p)
					_, existed := orig[p]
					assert.Equal(t, !written.Edits[i].Create, existed, p)
				}

				code, out, errOut = runCmd(t, append([]string{"resolve", "--root", root, "-o", "json"}, args...)...)
				require.Equal(t, exitOK, code, "%s%s", out, errOut)
				var res resolve.Result
				require.NoError(t, json.Unmarshal([]byte(out), &res))
				for _, e := range written.Edits {
					for _, c := range e.Changes {
						for _, k := range c.Answers {
							if excused[k] {
								continue
							}
							for _, f := range res.Fixes {
								assert.NotEqual(t, k, f.Answers, "%s remains after fix --write: %s", k, f.Message)
							}
						}
					}
				}

				code, out, errOut = runCmd(t, fix...)
				var again remedy.Plan
				require.NoError(t, json.Unmarshal([]byte(out), &again), "%s", errOut)
				assert.Empty(t, again.Edits, "a second fix edits")
				if !remains {
					assert.Equal(t, exitOK, code, "%s%s", out, errOut)
				}
			})
		}
	}
}

func TestFixText(t *testing.T) {
	t.Parallel()
	root := copyNode(t, filepath.Join(sampleNodes, "kubelet-flag-dropin"))
	args := []string{"fix", "--root", root, "--runtime-version", "2.4.2", "--kubelet-version", "1.35.0", "--kubeadm-config", "/etc/kubernetes/kubeadm.yaml"}
	code, out, errOut := runCmd(t, args...)
	require.Equal(t, exitCheck, code, errOut)
	for _, want := range []string{
		"--- a/etc/systemd/system/kubelet.service.d/20-sandbox.conf\n+++ b/etc/systemd/system/kubelet.service.d/20-sandbox.conf\n",
		"-Environment=\"KUBELET_EXTRA_ARGS=--node-ip=10.0.0.7 --pod-infra-container-image=registry.k8s.io/pause:3.10.2\"\n+Environment=\"KUBELET_EXTRA_ARGS=--node-ip=10.0.0.7\"\n",
		"-  - name: pod-infra-container-image\n-    value: registry.k8s.io/pause:3.10.2\n",
		"Then:\n1. restart: restart kubelet.service",
		"systemctl daemon-reload && systemctl restart kubelet.service",
		"Nothing was written: run again with --write",
	} {
		assert.Contains(t, out, want)
	}
	code, out, errOut = runCmd(t, append(args, "--write")...)
	require.Equal(t, exitOK, code, "%s%s", out, errOut)
	assert.Contains(t, out, "# written: /etc/systemd/system/kubelet.service.d/20-sandbox.conf (the original under /var/backups/sandboxpin/")
	code, out, _ = runCmd(t, args...)
	assert.Equal(t, exitOK, code)
	assert.Equal(t, "Nothing to change: the node needs no edit and no step.\n", out)

	// Usage and errors.
	code, _, errOut = runCmd(t, "fix", "--images", "x.json", "--runtime-endpoint", "unix:///x.sock")
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "give one")
	code, _, errOut = runCmd(t, "fix", "--root", t.TempDir())
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "empty directory")
}

// TestFixWriteSweeps: a temporary file that a killed run left in CRI-O's
// drop-in directory, which CRI-O and resolve read as configuration, is
// removed by fix --write before it resolves (and said on stderr): the
// plan is made from the node's own files, written, and names its backup
// directory (none here: the drop-in is new) in text and JSON.
func TestFixWriteSweeps(t *testing.T) {
	t.Parallel()
	root := copyNode(t, filepath.Join(sampleNodes, "crio-1.37-kubeadm-1.37"))
	dropins := filepath.Join(root, "etc/crio/crio.conf.d")
	require.NoError(t, os.MkdirAll(dropins, 0o750))
	stray := filepath.Join(dropins, ".99-sandboxpin.conf.sandboxpin-0123456789ab")
	require.NoError(t, os.WriteFile(stray, []byte("[crio.image]\npause_image = \"registry.k8s.io/pause:3.10.2\"\n"), 0o600))
	args := []string{"fix", "--root", root, "--runtime-version", "1.37.0", "--kubeadm-version", "v1.37.2"}
	code, out, errOut := runCmd(t, append(args, "--write")...)
	require.Equal(t, exitCheck, code, "%s%s", out, errOut) // the pull remains
	assert.Contains(t, errOut, "removed /etc/crio/crio.conf.d/.99-sandboxpin.conf.sandboxpin-0123456789ab, left by a run that was killed")
	assert.Contains(t, out, "# written: /etc/crio/crio.conf.d/99-sandboxpin.conf (new)")
	assert.NoFileExists(t, stray)
	entries, err := os.ReadDir(dropins)
	require.NoError(t, err)
	require.Len(t, entries, 1)
	assert.Equal(t, "99-sandboxpin.conf", entries[0].Name())
	assert.NoDirExists(t, filepath.Join(root, "var/backups"), "a backup directory without a backup")

	// A file replaced: the backup directory, in text and JSON.
	root = copyNode(t, filepath.Join(sampleNodes, "kubelet-flag-dropin"))
	args = []string{"fix", "--root", root, "--runtime-version", "2.4.2", "--kubelet-version", "1.35.0", "--kubeadm-config", "/etc/kubernetes/kubeadm.yaml", "--write", "-o", "json"}
	code, out, errOut = runCmd(t, args...)
	require.Equal(t, exitOK, code, "%s%s", out, errOut)
	var plan remedy.Plan
	require.NoError(t, json.Unmarshal([]byte(out), &plan))
	require.True(t, strings.HasPrefix(plan.Backup, remedy.DefaultBackupDir+"/"), "%q", plan.Backup)
	assert.DirExists(t, filepath.Join(root, plan.Backup))
	assert.Contains(t, out, `"backup": "`+plan.Backup+`"`)
}

// TestFixWritePulls: a node whose sandbox image is absent and named on the
// frozen registry: the plan edits the name and pulls the new one (not the
// old); with --runtime-endpoint, --write pulls it through CRI before it
// prints the restart; without --write nothing is pulled. On containerd
// 1.x the label of the pulled name remains (exit 1): the pull happens under
// the old config, which does not name it.
func TestFixWritePulls(t *testing.T) {
	t.Parallel()
	root := copyNode(t, filepath.Join(sampleNodes, "containerd-1.7-alias"))
	rt := &fakecri.Runtime{RuntimeName: "containerd", RuntimeVersion: "v1.7.20", Images: []*runtimeapi.Image{
		{Id: "sha256:" + hexID, RepoTags: []string{"registry.k8s.io/coredns/coredns:v1.12.0"}},
	}}
	sock := "unix://" + fakecri.Serve(t, rt)
	args := []string{"fix", "--root", root, "--runtime-endpoint", sock, "-o", "json"}

	code, out, errOut := runCmd(t, args...)
	require.Equal(t, exitCheck, code, "%s%s", out, errOut)
	assert.Empty(t, rt.Pulled())
	var plan remedy.Plan
	require.NoError(t, json.Unmarshal([]byte(out), &plan))
	i := slices.IndexFunc(plan.Steps, func(s remedy.Step) bool { return s.Action == resolve.ActionPull })
	require.GreaterOrEqual(t, i, 0, "a pull step: %+v", plan.Steps)
	assert.Equal(t, "registry.k8s.io/pause:3.9", plan.Steps[i].Image)
	assert.Equal(t, resolve.KindSandboxAbsent, plan.Steps[i].Answers)
	assert.Equal(t, 1, countFunc(plan.Steps, func(s remedy.Step) bool { return s.Action == resolve.ActionPull }), "no pull of the old name")

	code, out, errOut = runCmd(t, append(args, "--write")...)
	require.Equal(t, exitCheck, code, "%s%s", out, errOut)
	assert.Equal(t, []string{"registry.k8s.io/pause:3.9"}, rt.Pulled())
	var written remedy.Plan
	require.NoError(t, json.Unmarshal([]byte(out), &written))
	assert.True(t, written.Steps[i].Done)
	remains := slices.IndexFunc(written.Steps, func(s remedy.Step) bool { return s.Action == resolve.ActionLabel })
	require.GreaterOrEqual(t, remains, 0, "the label step: %+v", written.Steps)
	assert.Equal(t, "registry.k8s.io/pause:3.9", written.Steps[remains].Image)
	b, err := os.ReadFile(filepath.Join(root, "etc/containerd/config.toml"))
	require.NoError(t, err)
	assert.Contains(t, string(b), `sandbox_image = "registry.k8s.io/pause:3.9"`)
}

func countFunc[T any](s []T, f func(T) bool) int {
	n := 0
	for _, v := range s {
		if f(v) {
			n++
		}
	}
	return n
}
