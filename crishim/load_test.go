package crishim

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sandboxpin/sandboxpin/internal/runtimetest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The load test: 64 clients call ListImages (10,000 images) and ImageStatus
// through the shim binary for loadDuration while the node's config flips
// between two sandbox images, the shim gets a SIGHUP every 100 ms and its
// /metrics is scraped every 250 ms.

const (
	loadClients   = 64
	loadImages    = 10000
	loadReloadGap = 100 * time.Millisecond
	// loadDuration is the default run; SANDBOXPIN_LOAD_DURATION overrides
	// it. Under -race the default is loadDurationRace: the race detector
	// slows the clients five to tenfold, and a few seconds of 64 clients
	// and 50 reloads is what it needs to see a data race.
	loadDuration     = 30 * time.Second
	loadDurationRace = 5 * time.Second
	// loadRSSBound is the shim's peak RSS limit: 64 answers in flight, each
	// held at most twice (received, and patched: 1,000 of the images are
	// pinned, more than are spliced), 2.8 MB each, is 360 MB; the Go heap
	// may grow to twice its live size before a collection.
	loadRSSBound = 768 << 20
)

// Images whose pins the load test checks: the two sandbox images the config
// flips between, and the --pin glob's images (team7: every tenth).
const (
	loadPinGlob     = "registry.example.com/team7/*"
	loadAlwaysIndex = 7 // pinned by the glob
	loadNeverIndex  = 8 // pinned by nothing
)

// loadSandbox returns the tag of the sandbox image of config generation g
// (0 or 5 of benchImages).
func loadSandbox(imgs []*runtimeapi.Image, g int) string { return imgs[g].GetRepoTags()[0] }

// wantLoadPinned is the pin of image i under the rules with sandbox image
// index sandbox.
func wantLoadPinned(i, sandbox int) bool { return i == sandbox || i%10 == loadAlwaysIndex }

// buildShim builds internal/shimmain (a Shim with the flags of `sandboxpin
// shim`) into a temporary directory.
func buildShim(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(shortTempDir(t), "crishim")
	out, err := exec.Command("go", "build", "-o", bin, "./internal/shimmain").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return bin
}

// logValue returns the value of key in the first log line of msg.
func logValue(t *testing.T, log, msg, key string) string {
	t.Helper()
	for l := range strings.Lines(log) {
		if !strings.Contains(l, `msg="`+msg+`"`) {
			continue
		}
		for _, f := range strings.Fields(l) {
			if v, ok := strings.CutPrefix(f, key+"="); ok {
				return v
			}
		}
	}
	t.Fatalf("no %s= in a log line %q:\n%s", key, msg, log)
	return ""
}

// httpMetrics returns the body of GET url.
func httpMetrics(url string) (string, error) {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return string(b), err
}

// metricValue returns the value of a series (name and labels, as exposed)
// in the Prometheus text exposition, -1 when absent.
func metricValue(exposition, series string) float64 {
	for l := range strings.Lines(exposition) {
		if v, ok := strings.CutPrefix(l, series+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err == nil {
				return f
			}
		}
	}
	return -1
}

// peakRSS returns the VmHWM of process pid, in bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			require.NoError(t, err, "VmHWM %q", v)
			return kb << 10
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}

func TestLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for seconds with 64 clients")
	}
	duration := loadDuration
	if raceEnabled {
		duration = loadDurationRace
	}
	if v := os.Getenv("SANDBOXPIN_LOAD_DURATION"); v != "" {
		var err error
		duration, err = time.ParseDuration(v)
		require.NoError(t, err, "SANDBOXPIN_LOAD_DURATION")
	}
	bin := buildShim(t)
	imgs := benchImages(loadImages)
	runtimePath := startFake(t, &fakeRuntime{images: imgs})
	root := t.TempDir()
	writeConfig(t, root, containerdConfig(loadSandbox(imgs, 0)))
	shimPath := filepath.Join(shortTempDir(t), "shim.sock")
	stderr := &runtimetest.SyncBuffer{}
	cmd := exec.Command(bin, "--listen", "unix://"+shimPath, "--runtime-endpoint", "unix://"+runtimePath, "--root", root, "--pin", loadPinGlob,
		"--metrics-listen", "127.0.0.1:0")
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			if err := <-exited; err != nil {
				t.Logf("the killed shim: %v", err)
			}
		}
	})
	// Serve logs "serving", then "serving metrics": wait for the second.
	waitFor(t, 30*time.Second, "the shim to serve", func() bool { return strings.Contains(stderr.String(), `msg="serving metrics"`) })
	metricsURL := "http://" + logValue(t, stderr.String(), "serving metrics", "addr") + "/metrics"

	ctx, cancel := context.WithTimeout(context.Background(), duration)
	defer cancel()
	var (
		lists, statuses, errs, torn atomic.Int64
		firstErr                    atomic.Value
		wg                          sync.WaitGroup
	)
	fail := func(err error) {
		errs.Add(1)
		firstErr.CompareAndSwap(nil, err)
	}
	always, never := imgs[loadAlwaysIndex].GetRepoTags()[0], imgs[loadNeverIndex].GetRepoTags()[0]
	for c := range loadClients {
		client := runtimeapi.NewImageServiceClient(dial(t, shimPath))
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				callCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
				if (c+i)%2 == 0 {
					resp, err := client.ListImages(callCtx, &runtimeapi.ListImagesRequest{})
					cancel()
					if err != nil {
						fail(fmt.Errorf("ListImages: %w", err))
						continue
					}
					lists.Add(1)
					got := resp.GetImages()
					if len(got) != loadImages {
						fail(fmt.Errorf("ListImages: %d images", len(got)))
						continue
					}
					// The sandbox image of the rules this answer was pinned
					// with: every other pin must agree with the same rules.
					sandbox := 5
					if got[0].GetPinned() {
						sandbox = 0
					}
					for j, img := range got {
						if img.GetPinned() != wantLoadPinned(j, sandbox) {
							torn.Add(1)
							fail(fmt.Errorf("ListImages: image %d pinned %v under the rules pinning image %d", j, img.GetPinned(), sandbox))
							break
						}
					}
					continue
				}
				for _, tag := range []string{always, never} {
					resp, err := client.ImageStatus(callCtx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: tag}})
					if err != nil {
						fail(fmt.Errorf("ImageStatus %s: %w", tag, err))
						break
					}
					statuses.Add(1)
					if resp.GetImage().GetPinned() != (tag == always) {
						fail(fmt.Errorf("ImageStatus %s: pinned %v", tag, resp.GetImage().GetPinned()))
					}
				}
				cancel()
			}
		})
	}

	// The scraper, as Prometheus would but more often.
	var scrapes atomic.Int64
	wg.Go(func() {
		for ctx.Err() == nil {
			if _, err := httpMetrics(metricsURL); err != nil {
				fail(fmt.Errorf("scrape: %w", err))
			}
			scrapes.Add(1)
			time.Sleep(250 * time.Millisecond)
		}
	})

	// The reloader: flip the sandbox image, every tenth time write a
	// malformed file instead (the reload fails and keeps the rules), and
	// send SIGHUP, every 100 ms.
	var sighups, malformed int
	tick := time.NewTicker(loadReloadGap)
	defer tick.Stop()
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
			continue
		case <-tick.C:
		}
		sighups++
		switch {
		case sighups%10 == 0:
			writeConfig(t, root, "version = 3\n[plugins.'io.containerd.cri.v1.images'.pinned_images\n")
			malformed++
		case sighups%2 == 0:
			writeConfig(t, root, containerdConfig(loadSandbox(imgs, 0)))
		default:
			writeConfig(t, root, containerdConfig(loadSandbox(imgs, 5)))
		}
		require.NoError(t, cmd.Process.Signal(syscall.SIGHUP))
	}
	wg.Wait()

	// Under -race on a loaded machine the reloads coalesce, and the file a
	// reload reads may already be rewritten, so whether a malformed one was
	// read during the run is chance. Make one certain: a good config, then a
	// malformed one; the shim must say it keeps the rules and still pin
	// what the good one pins.
	writeConfig(t, root, containerdConfig(loadSandbox(imgs, 5)))
	loadedBefore := strings.Count(stderr.String(), "pin rules loaded") // before the signal: its reload may log at once
	require.NoError(t, cmd.Process.Signal(syscall.SIGHUP))
	waitFor(t, time.Minute, "the good config to load", func() bool { return strings.Count(stderr.String(), "pin rules loaded") > loadedBefore })
	failedBefore := strings.Count(stderr.String(), "keeping the previous ones")
	writeConfig(t, root, "version = 3\n[plugins.'io.containerd.cri.v1.images'.pinned_images\n")
	require.NoError(t, cmd.Process.Signal(syscall.SIGHUP))
	waitFor(t, time.Minute, "the malformed config to be refused", func() bool {
		return strings.Count(stderr.String(), "keeping the previous ones") > failedBefore
	})
	check := runtimeapi.NewImageServiceClient(dial(t, shimPath))
	callCtx, callCancel := context.WithTimeout(context.Background(), time.Minute)
	resp, err := check.ListImages(callCtx, &runtimeapi.ListImagesRequest{})
	callCancel()
	require.NoError(t, err, "ListImages after a failed reload")
	for j, img := range resp.GetImages() {
		require.Equal(t, wantLoadPinned(j, 5), img.GetPinned(), "image %d after a failed reload: the previous rules must hold", j)
	}

	// The metrics count what the clients saw and the log says.
	metrics, err := httpMetrics(metricsURL)
	require.NoError(t, err)
	log := stderr.String()
	for _, m := range []struct {
		series string
		want   int64
	}{
		{`sandboxpin_shim_calls_total{code="OK",method="/runtime.v1.ImageService/ListImages"}`, lists.Load() + 1}, // and the check
		{`sandboxpin_shim_calls_total{code="OK",method="/runtime.v1.ImageService/ImageStatus"}`, statuses.Load()},
		{`sandboxpin_shim_rule_reloads_total{result="ok"}`, int64(strings.Count(log, "pin rules loaded"))},
		{`sandboxpin_shim_rule_reloads_total{result="kept"}`, int64(strings.Count(log, "keeping the previous ones"))},
		{`sandboxpin_shim_rules`, 2},
	} {
		assert.Equal(t, float64(m.want), metricValue(metrics, m.series), "%s", m.series)
	}
	// Each answer pins its sandbox image and the glob's thousand.
	assert.GreaterOrEqual(t, metricValue(metrics, "sandboxpin_shim_images_pinned_total"), float64((lists.Load()+1)*(loadImages/10+1)+statuses.Load()/2))

	rss := peakRSS(t, cmd.Process.Pid)
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-exited:
		require.NoError(t, err, "exit status")
	case <-time.After(2 * shutdownGrace):
		t.Fatal("the shim did not stop on SIGTERM")
	}

	log = stderr.String()
	loaded := strings.Count(log, "pin rules loaded") - 2          // the first load and the certain one above are not counted
	failed := strings.Count(log, "keeping the previous ones") - 1 // the certain one above
	t.Logf("%v, %d clients: %d ListImages (%d images), %d ImageStatus, %d errors, %d torn; %d SIGHUPs (%d with a malformed config): %d reloads, %d failed; %d scrapes; shim peak RSS %d MiB",
		duration, loadClients, lists.Load(), loadImages, statuses.Load(), errs.Load(), torn.Load(), sighups, malformed, loaded, failed, scrapes.Load(), rss>>20)
	if err, ok := firstErr.Load().(error); ok {
		t.Errorf("first error: %v", err)
	}
	assert.Zero(t, errs.Load(), "errors")
	assert.Positive(t, lists.Load(), "ListImages served")
	assert.Positive(t, statuses.Load(), "ImageStatus served")
	assert.Positive(t, loaded, "reloads")
	assert.LessOrEqual(t, rss, int64(loadRSSBound), "the shim's peak RSS")
}
