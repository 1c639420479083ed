package crishim

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sandboxpin/sandboxpin/internal/containerdtest"
)

// TestLiveHop times the shim in front of a real containerd 2.2 holding
// many images, as TestHopTable does in front of the fake: a CRI client
// (ListImages, and ImageStatus of the pause image) and crictl (images -o
// json), directly, through the floor (a bare one-hop gRPC proxy) and
// through the shim. The shim pins the pause image, stored as registry.k8s.io/pause:3.10.1 while
// containerd is configured with the alias k8s.gcr.io/pause:3.10.1, which
// containerd itself leaves unpinned.
//
// Importing thousands of images takes a while, so it runs only when
// SANDBOXPIN_LIVE_HOP is set: to the image counts to try, comma-separated
// ("1000,10000"), or "1" for 1,000.
func TestLiveHop(t *testing.T) {
	spec := os.Getenv("SANDBOXPIN_LIVE_HOP")
	if spec == "" || testing.Short() || raceEnabled {
		t.Skip("set SANDBOXPIN_LIVE_HOP=1000,10000 to time the shim against containerd (not with -short or -race)")
	}
	if spec == "1" {
		spec = "1000"
	}
	crictl := containerdtest.Crictl(t)
	rounds := envInt(t, "SANDBOXPIN_HOP_ROUNDS", 20)
	var table strings.Builder
	fmt.Fprintf(&table, "\ncontainerd %v:\n| call | images | direct | floor (÷ direct) | shim (÷ direct) | shim ÷ floor |\n|---|---|---|---|---|---|\n", containerdtest.V2)
	for _, f := range strings.Split(spec, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		require.NoError(t, err, "SANDBOXPIN_LIVE_HOP")
		images := []containerdtest.Image{{Names: []string{tagPause}}}
		for i := 1; i < n; i++ {
			images = append(images, containerdtest.Image{Names: []string{fmt.Sprintf("registry.example.com/team%d/app%d:v1.%d", i%10, i, i)}})
		}
		start := time.Now()
		// Imported 1,000 at a time: one import of 10,000 exceeds the
		// helper's time limit for an import.
		const batch = 1000
		ctrd := containerdtest.Start(t, containerdtest.V2, containerdtest.Options{SandboxImage: "k8s.gcr.io/pause:3.10.1", Images: images[:min(batch, n)]})
		for i := batch; i < n; i += batch {
			ctrd.Import(t, images[i:min(i+batch, n)]...)
		}
		t.Logf("containerd with %d images ready in %v", n, time.Since(start).Round(time.Millisecond))
		root := t.TempDir()
		cfg, err := os.ReadFile(filepath.Join(ctrd.Dir, "config.toml"))
		require.NoError(t, err)
		writeConfig(t, root, string(cfg))
		shimPath := filepath.Join(shortTempDir(t), "shim.sock")
		startRunShim(t, Options{Listen: "unix://" + shimPath, RuntimeEndpoint: ctrd.Endpoint, Node: nodeOptions(root)})
		targets := []hopTarget{
			{name: "direct", path: ctrd.Socket},
			{name: "floor", path: startFloor(t, ctrd.Socket, defaultTuning())},
			{name: "shim", path: shimPath, wantPinned: true},
		}
		ctx := testContext(t)
		calls := []struct {
			name string
			call func(c runtimeapi.ImageServiceClient, wantPinned bool) error
		}{
			{name: "ListImages", call: func(c runtimeapi.ImageServiceClient, wantPinned bool) error {
				resp, err := c.ListImages(ctx, &runtimeapi.ListImagesRequest{})
				if err != nil {
					return err
				}
				if len(resp.GetImages()) != n {
					return fmt.Errorf("%d images", len(resp.GetImages()))
				}
				for _, img := range resp.GetImages() {
					if img.GetRepoTags()[0] == tagPause && img.GetPinned() != wantPinned {
						return fmt.Errorf("pause pinned %v", img.GetPinned())
					}
				}
				return nil
			}},
			{name: "ImageStatus", call: func(c runtimeapi.ImageServiceClient, wantPinned bool) error {
				resp, err := c.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: tagPause}})
				if err != nil {
					return err
				}
				if resp.GetImage().GetPinned() != wantPinned {
					return fmt.Errorf("pause pinned %v", resp.GetImage().GetPinned())
				}
				return nil
			}},
		}
		clients := make([]runtimeapi.ImageServiceClient, len(targets))
		for i, tg := range targets {
			clients[i] = runtimeapi.NewImageServiceClient(dial(t, tg.path))
		}
		for _, c := range calls {
			med := medians(t, rounds, len(targets), func(i int) error { return c.call(clients[i], targets[i].wantPinned) })
			hopRow(&table, c.name, n, med, time.Microsecond)
		}

		// crictl, as an operator runs it: the whole command, JSON included.
		crictlRun := func(i int) error {
			endpoint := "unix://" + targets[i].path
			cmd := exec.Command(crictl, "--runtime-endpoint", endpoint, "--image-endpoint", endpoint, "--timeout", "60s", "images", "-o", "json")
			cmd.Env = append(os.Environ(), "HOME="+root) // no user crictl.yaml
			out, err := cmd.Output()
			if err != nil {
				return fmt.Errorf("crictl: %w", err)
			}
			imgs := crictlImages(t, string(out))
			if len(imgs) != n {
				return fmt.Errorf("crictl: %d images", len(imgs))
			}
			for _, img := range imgs {
				if img.tag() == tagPause && img["pinned"] != targets[i].wantPinned {
					return fmt.Errorf("crictl: pause pinned %v", img["pinned"])
				}
			}
			return nil
		}
		med := medians(t, max(rounds/2, 3), len(targets), crictlRun)
		hopRow(&table, "crictl images", n, med, time.Millisecond)
	}
	t.Log(table.String())
}

// hopRow writes a row of the times direct, through the floor and through
// the shim, each with its ratio to direct, and the shim's to the floor.
func hopRow(table *strings.Builder, call string, n int, med []time.Duration, unit time.Duration) {
	fmt.Fprintf(table, "| %s | %d | %v |", call, n, med[0].Round(unit))
	for _, d := range med[1:] {
		fmt.Fprintf(table, " %v (%.2f×) |", d.Round(unit), float64(d)/float64(med[0]))
	}
	fmt.Fprintf(table, " %.2f× |\n", float64(med[2])/float64(med[1]))
}

// medians calls call(i) for each of k targets in turn, rounds times after
// three rounds of warm-up, and returns the median time of each. Each round
// starts at the next target, so that none always follows the same one
// (they share the runtime, which may still be busy with the call before),
// and each call starts after a garbage collection.
func medians(t *testing.T, rounds, k int, call func(i int) error) []time.Duration {
	t.Helper()
	times := make([][]time.Duration, k)
	for r := -3; r < rounds; r++ {
		for j := range k {
			i := (j + r + 3) % k
			runtime.GC()
			start := time.Now()
			require.NoError(t, call(i), "target %d", i)
			if r >= 0 {
				times[i] = append(times[i], time.Since(start))
			}
		}
	}
	med := make([]time.Duration, k)
	for i, ts := range times {
		slices.Sort(ts)
		med[i] = ts[len(ts)/2]
	}
	return med
}
