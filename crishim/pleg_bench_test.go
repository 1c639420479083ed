package crishim

import (
	"context"
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The kubelet's steady calls on a node, compressed: PLEG relists
// (ListPodSandbox and ListContainers) every second and the image manager
// lists images every 30 s, so one minute is 60 relists and 2 ListImages.
// The node: 30 pods of 2 containers each, 1,000 images.

const (
	plegPods       = 30
	plegContainers = 2 * plegPods
	plegImages     = 1000
	plegRelists    = 60 // one a second
	plegImageLists = 2  // one every 30 s
)

// plegRuntime is the fake runtime of a node with plegPods pods.
func plegRuntime() *fakeRuntime {
	f := &fakeRuntime{images: benchImages(plegImages)}
	for i := range plegPods {
		f.sandboxes = append(f.sandboxes, &runtimeapi.PodSandbox{
			Id:       fmt.Sprintf("%064x", i+1),
			Metadata: &runtimeapi.PodSandboxMetadata{Name: fmt.Sprintf("pod-%d", i), Namespace: "default", Uid: fmt.Sprintf("uid-%d", i)},
			State:    runtimeapi.PodSandboxState_SANDBOX_READY, CreatedAt: int64(i),
			Labels: map[string]string{"app": fmt.Sprintf("app-%d", i)}, RuntimeHandler: "runc",
		})
		for c := range 2 {
			f.containers = append(f.containers, &runtimeapi.Container{
				Id: fmt.Sprintf("%064x", 1000+2*i+c), PodSandboxId: fmt.Sprintf("%064x", i+1),
				Metadata: &runtimeapi.ContainerMetadata{Name: fmt.Sprintf("c%d", c)},
				Image:    &runtimeapi.ImageSpec{Image: benchImages(plegImages)[1+i].GetRepoTags()[0]},
				ImageRef: fmt.Sprintf(idPattern, 2+i), State: runtimeapi.ContainerState_CONTAINER_RUNNING,
			})
		}
	}
	return f
}

// plegMinute makes one minute of the kubelet's calls.
func plegMinute(ctx context.Context, rt runtimeapi.RuntimeServiceClient, img runtimeapi.ImageServiceClient) error {
	for i := range plegRelists {
		sb, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
		if err != nil {
			return err
		}
		cs, err := rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
		if err != nil {
			return err
		}
		if len(sb.GetItems()) != plegPods || len(cs.GetContainers()) != plegContainers {
			return fmt.Errorf("relist: %d sandboxes, %d containers", len(sb.GetItems()), len(cs.GetContainers()))
		}
		if i%(plegRelists/plegImageLists) == 0 {
			li, err := img.ListImages(ctx, &runtimeapi.ListImagesRequest{})
			if err != nil {
				return err
			}
			if len(li.GetImages()) != plegImages {
				return fmt.Errorf("ListImages: %d images", len(li.GetImages()))
			}
		}
	}
	return nil
}

// cpuTime returns the CPU time (user and system) this process has used.
func cpuTime(tb testing.TB) time.Duration {
	tb.Helper()
	var ru syscall.Rusage
	require.NoError(tb, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkPLEG makes one minute of the kubelet's calls per op, directly and
// through the shim, and reports the process's CPU time per minute (client,
// shim and fake runtime in one process: the difference is the shim's).
func BenchmarkPLEG(b *testing.B) {
	runtimePath := startFake(b, plegRuntime())
	_, shimPath := startShim(b, runtimePath, fixed(testMatcher(b)))
	for _, tg := range []struct{ name, path string }{{"direct", runtimePath}, {"shim", shimPath}} {
		b.Run(tg.name, func(b *testing.B) {
			conn := dial(b, tg.path)
			rt, img := runtimeapi.NewRuntimeServiceClient(conn), runtimeapi.NewImageServiceClient(conn)
			ctx := testContext(b)
			start := cpuTime(b)
			ops := 0
			for b.Loop() {
				if err := plegMinute(ctx, rt, img); err != nil {
					b.Fatal(err)
				}
				ops++
			}
			b.ReportMetric(float64((cpuTime(b)-start).Microseconds())/1000/float64(ops), "cpu-ms/min")
		})
	}
}

// TestPLEGCost alternates minutes of the kubelet's calls directly and
// through the shim and logs the shim's added CPU time per minute: the
// median of the differences.
func TestPLEGCost(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("times minutes of calls; -short or -race")
	}
	runtimePath := startFake(t, plegRuntime())
	_, shimPath := startShim(t, runtimePath, fixed(testMatcher(t)))
	ctx := testContext(t)
	clients := func(path string) (runtimeapi.RuntimeServiceClient, runtimeapi.ImageServiceClient) {
		conn := dial(t, path)
		return runtimeapi.NewRuntimeServiceClient(conn), runtimeapi.NewImageServiceClient(conn)
	}
	drt, dimg := clients(runtimePath)
	srt, simg := clients(shimPath)
	rounds := envInt(t, "SANDBOXPIN_PLEG_ROUNDS", 15)
	var direct, shim, added []time.Duration
	for range rounds {
		c0 := cpuTime(t)
		require.NoError(t, plegMinute(ctx, drt, dimg))
		c1 := cpuTime(t)
		require.NoError(t, plegMinute(ctx, srt, simg))
		c2 := cpuTime(t)
		direct, shim, added = append(direct, c1-c0), append(shim, c2-c1), append(added, (c2-c1)-(c1-c0))
	}
	med := func(d []time.Duration) time.Duration { slices.Sort(d); return d[len(d)/2] }
	t.Logf("one minute of kubelet calls (%d relists of %d pods/%d containers, %d ListImages of %d images), CPU of client+runtime(+shim), median of %d: direct %v, through the shim %v; the shim adds %v per minute (%.3f %% of one CPU)",
		plegRelists, plegPods, plegContainers, plegImageLists, plegImages, rounds, med(direct), med(shim), med(added), 100*float64(med(added))/float64(time.Minute))
}
