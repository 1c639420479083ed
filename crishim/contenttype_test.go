package crishim

import (
	"net"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// recorder is an upstream that records the content-type of every call and
// answers it with an empty message.
type recorder struct {
	mu   sync.Mutex
	seen [][]string
}

func (r *recorder) handle(_ any, ss grpc.ServerStream) error {
	md, _ := metadata.FromIncomingContext(ss.Context())
	r.mu.Lock()
	r.seen = append(r.seen, md.Get("content-type"))
	r.mu.Unlock()
	if err := ss.RecvMsg(new(rawFrame)); err != nil {
		return err
	}
	return ss.SendMsg(&rawFrame{})
}

func (r *recorder) last() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.seen) == 0 {
		return nil
	}
	return r.seen[len(r.seen)-1]
}

// TestUpstreamContentType checks that the runtime sees the shim's calls with
// the content type the kubelet's own client sends, plain "application/grpc"
// (CRI-O resets connections that announce "application/grpc+proto").
func TestUpstreamContentType(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	path := filepath.Join(shortTempDir(t), "rec.sock")
	lis, err := net.Listen("unix", path)
	require.NoError(t, err)
	srv := grpc.NewServer(grpc.ForceServerCodecV2(rawCodec{}), grpc.UnknownServiceHandler(rec.handle))
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	_, shimPath := startShim(t, path, fixed(testMatcher(t)))
	ctx := testContext(t)

	// What a kubelet-like client (generated stubs, default codec) sends.
	_, err = runtimeapi.NewImageServiceClient(dial(t, path)).ListImages(ctx, &runtimeapi.ListImagesRequest{})
	require.NoError(t, err)
	kubelet := rec.last()
	require.Equal(t, []string{"application/grpc"}, kubelet, "content-type of a kubelet-like client")

	tests := []struct {
		name string
		call func(conn *grpc.ClientConn) error
	}{
		{name: "ListImages", call: func(conn *grpc.ClientConn) error {
			_, err := runtimeapi.NewImageServiceClient(conn).ListImages(ctx, &runtimeapi.ListImagesRequest{})
			return err
		}},
		{name: "Version", call: func(conn *grpc.ClientConn) error {
			_, err := runtimeapi.NewRuntimeServiceClient(conn).Version(ctx, &runtimeapi.VersionRequest{})
			return err
		}},
		{name: "unknown method, raw client", call: func(conn *grpc.ClientConn) error {
			return conn.Invoke(ctx, futureMethod, &rawFrame{data: []byte("x")}, new(rawFrame), grpc.ForceCodecV2(rawCodec{}))
		}},
	}
	conn := dial(t, shimPath)
	for _, tt := range tests { // sequential: one recorder
		require.NoError(t, tt.call(conn), tt.name)
		assert.Equal(t, kubelet, rec.last(), "%s: content-type the runtime sees from the shim", tt.name)
	}
}
