package kubelettest_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/internal/containerdtest"
	"github.com/sandboxpin/sandboxpin/internal/criotest"
	"github.com/sandboxpin/sandboxpin/internal/kubelettest"
)

// fixRow is one runtime whose configured spelling of the pause image leaves
// the stored image unpinned, for TestFixUnderGC.
type fixRow struct {
	name       string
	runtime    string                 // runtimeContainerd or runtimeCRIO
	version    containerdtest.Version // containerd's build
	configured string                 // the sandbox image in the runtime's config
}

// fixRows are the live rows of issue 46, item 4 ("Proof against the judge").
var fixRows = []fixRow{
	// containerd 2.4.2 pins pinned_images.sandbox by an exact string
	// compare: k8s.gcr.io/pause leaves registry.k8s.io/pause unpinned.
	{name: "containerd-2.4/alias", runtime: runtimeContainerd, version: containerdtest.V24, configured: aliasPause},
	// CRI-O 1.36.3 pins pause_image by the names the image is stored
	// under: k8s.gcr.io/pause matches none of them.
	{name: "cri-o-1.36/alias", runtime: runtimeCRIO, configured: aliasPause},
}

// fixNode is a runtime under test as TestFixUnderGC needs it.
type fixNode struct {
	release  string
	endpoint string
	// root is a node root that holds the config the runtime reads (the
	// very file, not a copy): `sandboxpin fix --root` edits it.
	root string
	// config is the runtime's config file under root.
	config string
	// restore stores the pause image and the victim again, as the row
	// started, with the runtime on its current config.
	restore func(t *testing.T)
	// restart restarts the runtime on the config under root.
	restart func(t *testing.T)
}

// TestFixUnderGC is issue 46's proof against the judge: on a node whose
// configured spelling of the pause image leaves the stored image unpinned,
// a real kubelet v1.37.2 under disk pressure deletes it; after `sandboxpin
// fix --write` and a restart of the runtime, `sandboxpin audit` says
// protected and the same kubelet, under the same pressure, keeps it.
func TestFixUnderGC(t *testing.T) {
	t.Parallel()
	kubelettest.Require(t)
	for _, tt := range fixRows {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			runFixRow(t, tt)
		})
	}
}

func runFixRow(t *testing.T, tt fixRow) {
	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 2*rowTimeout)
	defer cancel()
	var n *fixNode
	switch tt.runtime {
	case runtimeContainerd:
		n = startFixContainerd(t, tt)
	case runtimeCRIO:
		n = startFixCRIO(t, tt)
	default:
		t.Fatalf("unknown runtime %q", tt.runtime)
	}
	cfgBefore, err := os.ReadFile(n.config)
	require.NoError(t, err)
	require.Contains(t, string(cfgBefore), aliasPause)

	// Before: audit predicts the harm, and the kubelet does it.
	code, out := audit(t, n.endpoint, n.root)
	require.Equal(t, 1, code, "audit before the fix:\n%s", out)
	t.Logf("%s (%s): audit before the fix: exit %d %s", tt.name, n.release, code, failLines(out))
	removed, kept := gcUnderPressure(ctx, t, tt.name+" before the fix", n.endpoint)
	require.NotEmpty(t, removed, "the kubelet did not delete the unpinned pause image %s", storedPause)
	require.Empty(t, kept)

	// The node as it was: the image back, under the canonical name.
	n.restore(t)
	code, out = audit(t, n.endpoint, n.root)
	require.Equal(t, 1, code, "audit on the restored node:\n%s", out)

	// The plan, then the write.
	code, plan := fix(t, n.root, n.endpoint)
	t.Logf("%s: `sandboxpin fix --root ROOT --runtime-endpoint %s` exit %d, the plan:\n%s", tt.name, n.endpoint, code, plan)
	require.Equal(t, 1, code, "fix without --write: a change is needed")
	cfg, err := os.ReadFile(n.config)
	require.NoError(t, err)
	require.Equal(t, string(cfgBefore), string(cfg), "fix without --write changed the config")
	// The diff: the configured spelling out, the stored one in.
	assert.Regexp(t, `(?m)^-.*`+regexp.QuoteMeta(`"`+tt.configured+`"`), plan, "the plan's diff")
	assert.Regexp(t, `(?m)^\+.*`+regexp.QuoteMeta(`"`+storedPause+`"`), plan, "the plan's diff")

	code, wrote := fix(t, n.root, n.endpoint, "--write")
	t.Logf("%s: `sandboxpin fix --root ROOT --runtime-endpoint %s --write` exit %d:\n%s", tt.name, n.endpoint, code, wrote)
	require.Equal(t, 0, code, "fix --write: nothing but the printed restarts should remain")
	assert.Regexp(t, `(?m)^\d+\. restart`, wrote, "fix prints the restart")
	cfg, err = os.ReadFile(n.config)
	require.NoError(t, err)
	require.NotEqual(t, string(cfgBefore), string(cfg), "fix --write left the config as it was")
	t.Logf("%s: the config after fix --write (%s):\n%s", tt.name, strings.TrimPrefix(n.config, n.root), cfg)

	// The restart the plan prints, done the harness's way.
	n.restart(t)

	code, out = audit(t, n.endpoint, n.root)
	t.Logf("%s: audit after the fix and the restart: exit %d %s", tt.name, code, failLines(out))
	require.Equal(t, 0, code, "audit after the fix:\n%s", out)
	require.True(t, pinnedByTag(ctx, t, n.endpoint)[storedPause], "the runtime reports %s unpinned after the fix", storedPause)
	code, again := fix(t, n.root, n.endpoint)
	t.Logf("%s: fix again: exit %d:\n%s", tt.name, code, again)
	assert.Equal(t, 0, code, "a second fix finds nothing to change")

	// After: the same kubelet, under the same pressure, keeps it.
	removed, kept = gcUnderPressure(ctx, t, tt.name+" after the fix", n.endpoint)
	assert.Empty(t, removed, "the kubelet deleted the pause image after the fix")
	assert.NotEmpty(t, kept)
	t.Logf("%s: row took %v", tt.name, time.Since(began).Round(time.Second))
}

// gcUnderPressure runs a kubelet under disk pressure against endpoint until
// it has removed the victim and run keptRounds GC rounds more, then stops
// it. It returns the kubelet's line that removed the pause image, if any,
// else the lines that show the rounds it survived.
func gcUnderPressure(ctx context.Context, t *testing.T, what, endpoint string) (removed string, kept []string) {
	t.Helper()
	ids := imageIDs(ctx, t, endpoint)
	pauseID, victimID := ids[storedPause], ids[victim]
	require.NotEmpty(t, pauseID, "the runtime does not list %s", storedPause)
	require.NotEmpty(t, victimID, "the runtime does not list %s", victim)
	t.Logf("%s: the runtime reports %s (%s) pinned=%v", what, storedPause, pauseID, pinnedByTag(ctx, t, endpoint)[storedPause])

	start := time.Now()
	k := kubelettest.Start(t, kubelettest.Options{RuntimeEndpoint: endpoint})
	defer k.Stop(t)
	line, err := k.WaitForLog(ctx, kubelettest.RemovingImage(victimID))
	require.NoError(t, err, "%s: the kubelet never removed the unpinned %s (%s)", what, victim, victimID)
	rounds := len(k.Lines(kubelettest.GCRound()))
	_, err = k.WaitForLogCount(ctx, kubelettest.GCRound(), rounds+keptRounds)
	require.NoError(t, err, "%s: GC rounds after the victim's removal", what)
	took := time.Since(start).Round(time.Second)
	gcLines := k.Lines(regexp.MustCompile(`image_gc_manager\.go|"Attempting to delete unused images"|"Removing image to free bytes"`))
	t.Logf("%s: the kubelet's image GC log (%d rounds under disk pressure, %v):\n%s", what, len(k.Lines(kubelettest.GCRound())), took, strings.Join(gcLines, "\n"))
	if lines := k.Lines(kubelettest.RemovingImage(pauseID)); len(lines) > 0 {
		t.Logf("%s: %s DELETED: %s", what, storedPause, lines[0])
		assert.NotContains(t, pinnedByTag(ctx, t, endpoint), storedPause, "the runtime still lists the pause image")
		return lines[0], nil
	}
	t.Logf("%s: %s KEPT through the round that removed the victim (%s) and %d more", what, storedPause, line, keptRounds)
	require.Contains(t, pinnedByTag(ctx, t, endpoint), storedPause, "the runtime lists the pause image")
	return "", append([]string{line}, k.Lines(kubelettest.GCRound())[rounds:]...)
}

// fix runs `sandboxpin fix --root root --runtime-endpoint endpoint` with
// args and returns its exit code and standard output; exit 2 or 3 fails t.
func fix(t *testing.T, root, endpoint string, args ...string) (int, string) {
	t.Helper()
	bin, err := sandboxpinBinary()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"fix", "--root", root, "--runtime-endpoint", endpoint}, args...)...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	code := cmd.ProcessState.ExitCode()
	if err != nil && code < 0 || code >= 2 {
		t.Fatalf("fix %q: exit %d (%v)\nstdout:\n%s\nstderr:\n%s", args, code, err, stdout.String(), stderr.String())
	}
	return code, stdout.String()
}

// startFixContainerd starts containerd tt.version configured with
// tt.configured and storing the pause image and the victim, its config the
// file ROOT/etc/containerd/config.toml of a node root: the harness's
// config file becomes a link to it, so that containerd reads what fix
// writes.
func startFixContainerd(t *testing.T, tt fixRow) *fixNode {
	pause, err := pauseBinary()
	require.NoError(t, err)
	// Offline: nothing the fix may pull leaves the machine.
	ctrd := containerdtest.Start(t, tt.version, containerdtest.Options{SandboxImage: tt.configured, Offline: true})
	images := []containerdtest.Image{{Names: []string{storedPause}, Executable: pause}, {Names: []string{victim}}}
	ctrd.Import(t, images...)
	root := t.TempDir()
	nodeCfg := filepath.Join(root, "etc", "containerd", "config.toml")
	require.NoError(t, os.MkdirAll(filepath.Dir(nodeCfg), 0o750))
	harnessCfg := filepath.Join(ctrd.Dir, "config.toml")
	copyFile(t, harnessCfg, nodeCfg)
	require.NoError(t, os.Remove(harnessCfg))
	require.NoError(t, os.Symlink(nodeCfg, harnessCfg))
	// Restarted on the link: containerd reads the node root's file.
	ctrd.Restart(t)
	return &fixNode{
		release:  "containerd " + tt.version.Release(),
		endpoint: ctrd.Endpoint,
		root:     root,
		config:   nodeCfg,
		restore:  func(t *testing.T) { ctrd.Import(t, images...) },
		restart:  func(t *testing.T) { ctrd.Restart(t) },
	}
}

// startFixCRIO starts CRI-O configured with tt.configured and storing the
// pause image and the victim; its directory is a node root already.
func startFixCRIO(t *testing.T, tt fixRow) *fixNode {
	criotest.Require(t)
	pause, err := pauseBinary()
	require.NoError(t, err)
	images := []containerdtest.Image{{Names: []string{storedPause}, Executable: pause}, {Names: []string{victim}}}
	c := criotest.Start(t, criotest.Options{PauseImage: tt.configured, Images: images, Offline: true})
	return &fixNode{
		release:  "CRI-O " + strings.TrimPrefix(criotest.Version, "v"),
		endpoint: c.Endpoint,
		root:     c.Dir,
		config:   c.ConfigPath,
		// Loaded with CRI-O stopped, as Start loads them.
		restore: func(t *testing.T) {
			c.Stop()
			c.Load(t, images...)
			c.Restart(t)
		},
		restart: func(t *testing.T) { c.Restart(t) },
	}
}
