package crishim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The cost of the shim's hop, measured as a user sees it: a CRI client
// (generated stubs, as the kubelet's) calls the fake runtime directly;
// through a bare one-hop gRPC proxy (startFloor: the floor of any gRPC
// proxy); and through the shim, which patches the pause image's pinned in
// every answer (its worst case).

// hopSizes are the image counts measured.
var hopSizes = []int{1000, 10000}

// hopTarget is one way to reach the runtime.
type hopTarget struct {
	name       string
	path       string
	wantPinned bool // the pause image's pinned in the answer
}

// hopSetup starts a fake runtime with n images, the floor and a shim in
// front of it.
func hopSetup(tb testing.TB, n int) []hopTarget {
	tb.Helper()
	runtimePath := startFake(tb, &fakeRuntime{images: benchImages(n)})
	_, shimPath := startShim(tb, runtimePath, fixed(testMatcher(tb)))
	return []hopTarget{
		{name: "direct", path: runtimePath},
		{name: "floor", path: startFloor(tb, runtimePath, defaultTuning())},
		{name: "shim", path: shimPath, wantPinned: true},
	}
}

// startFloor serves a bare one-hop gRPC proxy in front of the socket at
// runtimePath until the test ends, over transports sized by tuning, and
// returns its socket path. It is the floor of any gRPC proxy: it forwards
// one request and the answers, in gRPC's buffers as the shim does, and
// nothing else (no metadata, rules or metrics).
func startFloor(tb testing.TB, runtimePath string, tuning hopTuning) string {
	tb.Helper()
	up, err := grpc.NewClient("unix://"+runtimePath, append([]grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(wireCodec{}), grpc.MaxCallRecvMsgSize(maxMsgSize)),
	}, tuning.dialOptions()...)...)
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = up.Close() })
	hop := func(_ any, down grpc.ServerStream) error {
		method, _ := grpc.MethodFromServerStream(down)
		req := new(frame)
		if err := down.RecvMsg(req); err != nil {
			return err
		}
		stream, err := up.NewStream(down.Context(), &proxyDesc, method)
		if err != nil {
			return err
		}
		if err := stream.SendMsg(req); err != nil {
			return err
		}
		if err := stream.CloseSend(); err != nil {
			return err
		}
		for {
			f := new(frame)
			if err := stream.RecvMsg(f); errors.Is(err, io.EOF) {
				return nil
			} else if err != nil {
				return err
			}
			if err := down.SendMsg(f); err != nil {
				return err
			}
		}
	}
	srv := grpc.NewServer(append([]grpc.ServerOption{grpc.ForceServerCodecV2(wireCodec{}), grpc.UnknownServiceHandler(hop)},
		tuning.serverOptions()...)...)
	path := filepath.Join(shortTempDir(tb), "floor.sock")
	lis, err := net.Listen("unix", path)
	require.NoError(tb, err)
	go func() { _ = srv.Serve(lis) }()
	tb.Cleanup(srv.Stop)
	return path
}

// hopCall is one of the measured calls; it checks the answer.
type hopCall struct {
	name string
	call func(ctx context.Context, c runtimeapi.ImageServiceClient, n int, wantPinned bool) error
}

var hopCalls = []hopCall{
	{name: "ListImages", call: func(ctx context.Context, c runtimeapi.ImageServiceClient, n int, wantPinned bool) error {
		resp, err := c.ListImages(ctx, &runtimeapi.ListImagesRequest{})
		if err != nil {
			return err
		}
		if imgs := resp.GetImages(); len(imgs) != n || imgs[0].GetPinned() != wantPinned {
			return fmt.Errorf("ListImages: %d images, pause pinned %v", len(imgs), imgs[0].GetPinned())
		}
		return nil
	}},
	{name: "ImageStatus", call: func(ctx context.Context, c runtimeapi.ImageServiceClient, _ int, wantPinned bool) error {
		resp, err := c.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: tagPause}})
		if err != nil {
			return err
		}
		if resp.GetImage().GetPinned() != wantPinned {
			return fmt.Errorf("ImageStatus: pause pinned %v", resp.GetImage().GetPinned())
		}
		return nil
	}},
}

// BenchmarkHop measures each call directly, through the floor and through
// the shim, at 1,000 and 10,000 images. The shim's own allocations per
// response are its allocs/op minus direct's.
func BenchmarkHop(b *testing.B) {
	for _, n := range hopSizes {
		targets := hopSetup(b, n)
		for _, hc := range hopCalls {
			for _, tg := range targets {
				b.Run(fmt.Sprintf("%s/images=%d/%s", hc.name, n, tg.name), func(b *testing.B) {
					client := runtimeapi.NewImageServiceClient(dial(b, tg.path))
					ctx := testContext(b)
					b.ReportAllocs()
					for b.Loop() {
						if err := hc.call(ctx, client, n, tg.wantPinned); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}

// hopRounds is how many alternating calls TestHopTable times per target;
// SANDBOXPIN_HOP_ROUNDS overrides it.
const hopRounds = 40

// TestHopTable times direct, floor and shim calls alternately (the median
// of hopRounds each) and logs the table the shim's cost is judged by. The
// limits are checked only when SANDBOXPIN_HOP_MAX_RATIO is set (1.25, the
// target, on a quiet machine): ListImages through the shim at most that
// ratio of the floor, ImageStatus at most the floor plus 10 % of direct.
// Timings on a shared CI machine are too noisy to gate every run on.
func TestHopTable(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("times thousands of calls; -short or -race")
	}
	rounds := envInt(t, "SANDBOXPIN_HOP_ROUNDS", hopRounds)
	maxRatio := 0.0
	if v := os.Getenv("SANDBOXPIN_HOP_MAX_RATIO"); v != "" {
		var err error
		maxRatio, err = strconv.ParseFloat(v, 64)
		require.NoError(t, err, "SANDBOXPIN_HOP_MAX_RATIO")
	}
	var table strings.Builder
	fmt.Fprintf(&table, "\n| call | response | images | direct | floor (÷ direct) | shim (÷ direct) | shim ÷ floor |\n|---|---|---|---|---|---|---|\n")
	for _, n := range hopSizes {
		targets := hopSetup(t, n)
		size := proto.Size(&runtimeapi.ListImagesResponse{Images: benchImages(n)})
		for _, hc := range hopCalls {
			clients := make([]runtimeapi.ImageServiceClient, len(targets))
			for i, tg := range targets {
				clients[i] = runtimeapi.NewImageServiceClient(dial(t, tg.path))
			}
			ctx := testContext(t)
			med := medians(t, rounds, len(targets), func(i int) error {
				if err := hc.call(ctx, clients[i], n, targets[i].wantPinned); err != nil {
					return fmt.Errorf("%s: %w", targets[i].name, err)
				}
				return nil
			})
			respSize := size
			if hc.name == "ImageStatus" {
				respSize = proto.Size(&runtimeapi.ImageStatusResponse{Image: benchImages(1)[0]})
			}
			hopRow(&table, fmt.Sprintf("%s | %d B", hc.name, respSize), n, med, time.Microsecond)
			shimRatio := float64(med[2]) / float64(med[1])
			switch {
			case maxRatio == 0:
			case hc.name == "ImageStatus":
				// A small call is judged against the floor plus a tenth
				// of the call (docs/design.md, Budgets): no proxy beats one
				// extra round trip.
				require.LessOrEqual(t, med[2], med[1]+med[0]/10, "%s at %d images: shim vs the floor + 10 %% of direct", hc.name, n)
			default:
				require.LessOrEqual(t, shimRatio, maxRatio, "%s at %d images: shim/floor", hc.name, n)
			}
		}
	}
	t.Log(table.String())
}

// envInt returns the positive integer in the environment variable name, or
// def when it is not set.
func envInt(tb testing.TB, name string, def int) int {
	tb.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	require.NoError(tb, err, "%s", name)
	require.Positive(tb, n, "%s", name)
	return n
}

// TestHopTuning times ListImages of 10,000 images through the floor with
// gRPC's default transport and with each part of defaultTuning,
// alternately, and logs the medians: what each part buys.
func TestHopTuning(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("times hundreds of calls; -short or -race")
	}
	const n = 10000
	rounds := envInt(t, "SANDBOXPIN_HOP_ROUNDS", hopRounds)
	runtimePath := startFake(t, &fakeRuntime{images: benchImages(n)})
	def := defaultTuning()
	variants := []struct {
		name   string
		tuning hopTuning
	}{
		{name: "gRPC defaults", tuning: hopTuning{}},
		{name: "static window", tuning: hopTuning{window: def.window}},
		{name: "socket buffers", tuning: hopTuning{readBuf: def.readBuf, writeBuf: def.writeBuf}},
		{name: "both (defaultTuning)", tuning: def},
	}
	clients := []runtimeapi.ImageServiceClient{runtimeapi.NewImageServiceClient(dial(t, runtimePath))}
	for _, v := range variants {
		clients = append(clients, runtimeapi.NewImageServiceClient(dial(t, startFloor(t, runtimePath, v.tuning))))
	}
	ctx := testContext(t)
	med := medians(t, rounds, len(clients), func(i int) error { return hopCalls[0].call(ctx, clients[i], n, false) })
	var table strings.Builder
	fmt.Fprintf(&table, "\nListImages, %d images, bare pass-through:\n| transport | median | / direct |\n|---|---|---|\n", n)
	names := []string{"direct"}
	for _, v := range variants {
		names = append(names, v.name)
	}
	for i, d := range med {
		fmt.Fprintf(&table, "| %s | %v | %.2f× |\n", names[i], d.Round(time.Microsecond), float64(d)/float64(med[0]))
	}
	t.Log(table.String())
}
