package containerdtest_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sandboxpin/sandboxpin/internal/containerdtest"
)

// envLiveList names the variable that turns BenchmarkLiveListImages on: the
// image counts to grow both daemons to, comma-separated, ascending
// ("1000,10000"), or "1" for those two.
const envLiveList = "SANDBOXPIN_LIVE_LIST"

// BenchmarkLiveListImages times CRI ListImages on the stock containerd 2.4.2
// and on the patched one, both configured with the alias
// k8s.gcr.io/pause:3.10.1 and holding the same images (the pause image
// stored as registry.k8s.io/pause:3.10.1, and others), at each count of
// SANDBOXPIN_LIVE_LIST, in one run. The patch decides labels when an image
// is created, not in ListImages, so the two should cost the same; the time
// to import each batch (labels included) is logged beside.
//
// Importing thousands of images takes minutes, so it runs only when
// SANDBOXPIN_LIVE_LIST is set.
func BenchmarkLiveListImages(b *testing.B) {
	spec := os.Getenv(envLiveList)
	if spec == "" {
		b.Skipf("set %s=1000,10000 to time ListImages on the stock and the patched containerd", envLiveList)
	}
	if spec == "1" {
		spec = "1000,10000"
	}
	var counts []int
	for _, f := range strings.Split(spec, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		require.NoError(b, err, envLiveList)
		counts = append(counts, n)
	}
	versions := []containerdtest.Version{containerdtest.V24, containerdtest.V24Pin}
	const stored = "registry.k8s.io/pause:3.10.1"
	daemons := map[containerdtest.Version]*containerdtest.Containerd{}
	for _, v := range versions {
		daemons[v] = containerdtest.Start(b, v, containerdtest.Options{
			SandboxImage: "k8s.gcr.io/pause:3.10.1",
			Images:       []containerdtest.Image{{Names: []string{stored}}},
		})
	}
	have := 1
	for _, n := range counts {
		var images []containerdtest.Image
		for i := have; i < n; i++ {
			images = append(images, containerdtest.Image{Names: []string{fmt.Sprintf("registry.example.com/team%d/app%d:v1.%d", i%10, i, i)}})
		}
		// Imported 250 at a time: the helper gives an import a minute,
		// and with 9,000 images in the store the CRI plugin took in
		// fewer than 10 a second here (batches of 1,000 and 500 timed
		// out).
		const batch = 250
		for _, v := range versions {
			start := time.Now()
			for i := 0; i < len(images); i += batch {
				daemons[v].Import(b, images[i:min(i+batch, len(images))]...)
			}
			b.Logf("%v: %d images imported in %v (%d → %d)", v, len(images), time.Since(start).Round(time.Millisecond), have, n)
		}
		have = n
		for _, v := range versions {
			b.Run(fmt.Sprintf("images=%d/%v", n, v), func(b *testing.B) {
				ctx := context.Background()
				conn, err := grpc.DialContext(ctx, daemons[v].Endpoint, grpc.WithTransportCredentials(insecure.NewCredentials())) //nolint:staticcheck // SA1019: NewClient needs grpc 1.63, above this module's floor
				require.NoError(b, err)
				defer conn.Close()
				is := runtimeapi.NewImageServiceClient(conn)
				check, err := is.ListImages(ctx, &runtimeapi.ListImagesRequest{})
				require.NoError(b, err)
				require.Len(b, check.GetImages(), n)
				pinned := 0
				for _, img := range check.GetImages() {
					if img.GetPinned() {
						pinned++
					}
				}
				// Stock pins nothing (the alias); patched the pause image.
				require.Equal(b, map[bool]int{false: 0, true: 1}[v == containerdtest.V24Pin], pinned, "pinned images")
				b.ReportAllocs()
				for b.Loop() {
					if _, err := is.ListImages(ctx, &runtimeapi.ListImagesRequest{}, grpc.MaxCallRecvMsgSize(64<<20)); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
