package release_test

import (
	"archive/zip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/internal/release"
)

// git runs git in dir.
func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.invalid"}, args...)...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
}

// TestAddModule serves a root and a nested module of a git repository at a
// tag and downloads them with the go command, which checks the proxy's
// layout and the zips' contents.
func TestAddModule(t *testing.T) {
	t.Parallel()
	repo, proxy := t.TempDir(), t.TempDir()
	for name, content := range map[string]string{
		"LICENSE":        "the license\n",
		"go.mod":         "module example.com/m\n\ngo 1.24\n",
		"m.go":           "package m\n",
		"sub/go.mod":     "module example.com/m/sub\n\ngo 1.24\n",
		"sub/sub.go":     "package sub\n",
		"sub/untracked":  "",
		"sub/.gitignore": "untracked\n",
	} {
		require.NoError(t, os.MkdirAll(filepath.Join(repo, filepath.Dir(name)), 0o750))
		require.NoError(t, os.WriteFile(filepath.Join(repo, name), []byte(content), 0o600))
	}
	git(t, repo, "init", "-q")
	git(t, repo, "add", ".")
	git(t, repo, "commit", "-qm", "m")
	git(t, repo, "tag", "sub/v1.0.0")
	when := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	require.NoError(t, release.AddModule(proxy, "v1.0.0", when, release.Source{Root: repo, Subdir: "sub", Rev: "sub/v1.0.0"}))
	require.NoError(t, release.AddModule(proxy, "v1.0.0", when, release.Source{Root: repo, Rev: "HEAD"}))
	require.NoError(t, release.AddModule(proxy, "v1.0.1", when, release.Source{Root: repo, Rev: "HEAD"}))

	list, err := os.ReadFile(filepath.Join(proxy, "example.com", "m", "@v", "list"))
	require.NoError(t, err)
	assert.Equal(t, "v1.0.0\nv1.0.1\n", string(list))
	info, err := os.ReadFile(filepath.Join(proxy, "example.com", "m", "sub", "@v", "v1.0.0.info"))
	require.NoError(t, err)
	assert.JSONEq(t, `{"Version":"v1.0.0","Time":"2026-01-02T03:04:05Z"}`, string(info))

	cmd := exec.Command("go", "mod", "download", "-json", "example.com/m/sub@v1.0.0", "example.com/m@v1.0.1")
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "GOPROXY=file://"+filepath.ToSlash(proxy), "GONOSUMDB=example.com", "GOFLAGS=-modcacherw",
		"GOMODCACHE="+t.TempDir(), "GOWORK=off")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Equal(t, 2, strings.Count(string(out), `"Zip"`), "%s", out)

	// What the go command zips from git: the root's LICENSE in the nested
	// module, no untracked file.
	z, err := zip.OpenReader(filepath.Join(proxy, "example.com", "m", "sub", "@v", "v1.0.0.zip"))
	require.NoError(t, err)
	defer z.Close()
	var names []string
	for _, f := range z.File {
		names = append(names, f.Name)
	}
	assert.ElementsMatch(t, []string{"example.com/m/sub@v1.0.0/.gitignore", "example.com/m/sub@v1.0.0/LICENSE",
		"example.com/m/sub@v1.0.0/go.mod", "example.com/m/sub@v1.0.0/sub.go"}, names)

	err = release.AddModule(proxy, "v1.0", when, release.Source{Root: repo, Rev: "HEAD"})
	assert.ErrorContains(t, err, `example.com/m@v1.0: create zip`)
	err = release.AddModule(proxy, "v1.0.0", when, release.Source{Root: repo, Rev: "v9.9.9"})
	assert.ErrorContains(t, err, "git show v9.9.9:go.mod")
}
