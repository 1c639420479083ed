package cri

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"syscall"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sandboxpin/sandboxpin/criinfo"
)

// maxMsgSize is the largest response accepted, 16 MiB, as kubelet and crictl
// allow: ListImages on a node with thousands of images exceeds gRPC's 4 MiB
// default.
const maxMsgSize = 16 << 20

// RPC names used in [Error.RPC].
const (
	rpcDial        = "dial"
	rpcVersion     = "RuntimeService/Version"
	rpcStatus      = "RuntimeService/Status"
	rpcListImages  = "ImageService/ListImages"
	rpcImageStatus = "ImageService/ImageStatus"
	rpcPullImage   = "ImageService/PullImage"
)

// DefaultEndpoints returns the usual CRI sockets, in the order kubeadm tries
// them: containerd, CRI-O, cri-dockerd.
func DefaultEndpoints() []string {
	return []string{
		"unix:///run/containerd/containerd.sock",
		"unix:///var/run/crio/crio.sock",
		"unix:///run/cri-dockerd.sock",
	}
}

// Client talks to one CRI endpoint. Create it with [Dial]; it is safe for
// concurrent use. After [Client.Close], and on a zero or nil Client, every
// call returns an error wrapping [ErrClosed].
type Client struct {
	endpoint string
	conn     *grpc.ClientConn
	runtime  runtimeapi.RuntimeServiceClient
	images   runtimeapi.ImageServiceClient
	closed   atomic.Bool
}

// Info is the method that package resolve needs from a live runtime.
var _ interface {
	Info(context.Context) (criinfo.Info, error)
} = (*Client)(nil)

// socketPath returns the file system path of endpoint.
func socketPath(endpoint string) (string, error) {
	p := endpoint
	if rest, ok := strings.CutPrefix(endpoint, "unix://"); ok {
		p = rest
	}
	if !strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("%w: %q: want unix:///path or /path", ErrInvalidEndpoint, endpoint)
	}
	return p, nil
}

// Dial connects to the CRI endpoint, "unix:///path" or "/path". It checks
// that something accepts connections on the socket (ErrNoSocket if not); it
// does not call any RPC. The connection is made by [grpc.NewClient] with
// insecure transport credentials (a local socket), a dialer for the socket
// and a 16 MiB receive limit (the kubelet's); opts come after these and may
// override them (interceptors, keepalive, a larger limit).
func Dial(ctx context.Context, endpoint string, opts ...grpc.DialOption) (*Client, error) {
	path, err := socketPath(endpoint)
	if err != nil {
		return nil, &Error{Endpoint: endpoint, RPC: rpcDial, Err: err}
	}
	if err := probe(ctx, path); err != nil {
		return nil, &Error{Endpoint: endpoint, RPC: rpcDial, Err: err}
	}
	dialer := func(ctx context.Context, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}
	// The target is only a name here: the dialer ignores it and uses path.
	// NewClient connects lazily, on the first RPC.
	conn, err := grpc.NewClient("passthrough:///cri", append([]grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(dialer),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMsgSize)),
	}, opts...)...)
	if err != nil {
		return nil, &Error{Endpoint: endpoint, RPC: rpcDial, Err: err}
	}
	return &Client{
		endpoint: endpoint,
		conn:     conn,
		runtime:  runtimeapi.NewRuntimeServiceClient(conn),
		images:   runtimeapi.NewImageServiceClient(conn),
	}, nil
}

// probe connects to the socket once, to tell a missing socket from a server
// that is there.
func probe(ctx context.Context, path string) error {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%w: %s does not exist", ErrNoSocket, path)
	case err != nil:
		return fmt.Errorf("%w: %w", ErrNoSocket, err)
	case fi.Mode().Type() != os.ModeSocket:
		return fmt.Errorf("%w: %s is not a socket", ErrNoSocket, path)
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return fmt.Errorf("%w: %w", ctxErr, err)
		}
		if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOENT) {
			return fmt.Errorf("%w: %w", ErrNoSocket, err)
		}
		return err
	}
	return c.Close()
}

// Close closes the connection. Calls in flight and later calls fail with
// an error wrapping [ErrClosed]. Closing a closed, zero or nil Client does
// nothing and returns nil.
func (c *Client) Close() error {
	if c == nil || c.conn == nil || c.closed.Swap(true) {
		return nil
	}
	return c.conn.Close()
}

// usable returns an error wrapping ErrClosed when c cannot make the call
// rpc: it is nil, zero (not made by Dial) or closed.
func (c *Client) usable(rpc string) error {
	switch {
	case c == nil || c.conn == nil:
		return &Error{RPC: rpc, Err: fmt.Errorf("%w: not made by Dial", ErrClosed)}
	case c.closed.Load():
		return &Error{Endpoint: c.endpoint, RPC: rpc, Err: ErrClosed}
	}
	return nil
}

// fail wraps an RPC error so that callers can branch on it.
func (c *Client) fail(ctx context.Context, rpc string, err error) error {
	st, _ := status.FromError(err)
	switch {
	case c.closed.Load():
		// gRPC answers Canceled ("the client connection is closing"),
		// which is not the caller's context.
		err = fmt.Errorf("%w: %w", ErrClosed, err)
	case ctx.Err() != nil:
		err = fmt.Errorf("%w: %w", ctx.Err(), err)
	case st.Code() == codes.DeadlineExceeded:
		err = fmt.Errorf("%w: %w", context.DeadlineExceeded, err)
	case st.Code() == codes.Canceled:
		err = fmt.Errorf("%w: %w", context.Canceled, err)
	case st.Code() == codes.Unimplemented:
		err = fmt.Errorf("%w: %w", ErrNotCRI, err)
	case st.Code() == codes.Unavailable:
		// The socket accepted a connection in Dial. Unavailable now means
		// that the server went away, or that it does not speak gRPC (no
		// HTTP/2 preface); gRPC does not expose the cause as an error value.
		if msg := st.Message(); strings.Contains(msg, "connection refused") || strings.Contains(msg, "no such file") {
			err = fmt.Errorf("%w: %w", ErrNoSocket, err)
		} else {
			err = fmt.Errorf("%w: %w", ErrNotCRI, err)
		}
	}
	return &Error{Endpoint: c.endpoint, RPC: rpc, Err: err}
}

// isTooLarge reports whether err is gRPC's refusal of a message over
// maxMsgSize: ResourceExhausted, "grpc: received message larger than max
// (N vs. M)" (or "... after decompression larger than max"), not a server's
// own ResourceExhausted.
func isTooLarge(err error) bool {
	st, _ := status.FromError(err)
	return st.Code() == codes.ResourceExhausted && strings.Contains(st.Message(), "larger than max")
}

// runtimeName maps a VersionResponse.RuntimeName to an Info.Runtime,
// criinfo.RuntimeUnknown when the name is not one we know.
func runtimeName(name string) criinfo.Runtime {
	switch strings.ToLower(name) {
	case "containerd":
		return criinfo.RuntimeContainerd
	case "cri-o":
		return criinfo.RuntimeCRIO
	case "docker", "cri-dockerd":
		return criinfo.RuntimeCRIDockerd
	}
	return criinfo.RuntimeUnknown
}

// Info returns what the runtime reports: Version, then Status with Verbose
// set, parsed with criinfo.Parse. Runtime and RuntimeVersion come from
// Version, whose answer wins over what the Info map suggests. For
// cri-dockerd (RuntimeName "docker") the version is Docker Engine's and goes
// to EngineVersion: RuntimeVersion stays "", since nothing a CRI client can
// ask states cri-dockerd's own.
func (c *Client) Info(ctx context.Context) (criinfo.Info, error) {
	if err := c.usable(rpcVersion); err != nil {
		return criinfo.Info{}, err
	}
	v, err := c.runtime.Version(ctx, &runtimeapi.VersionRequest{})
	if err != nil {
		return criinfo.Info{}, c.fail(ctx, rpcVersion, err)
	}
	st, err := c.runtime.Status(ctx, &runtimeapi.StatusRequest{Verbose: true})
	if err != nil {
		if isTooLarge(err) {
			// The Info is over criinfo.MaxInputSize (16 MiB, maxMsgSize):
			// gRPC refused it before criinfo.Parse could. Callers see the
			// same sentinel either way.
			err = fmt.Errorf("%w: %w", criinfo.ErrTooLarge, err)
		}
		return criinfo.Info{}, c.fail(ctx, rpcStatus, err)
	}
	info, err := criinfo.Parse(st.GetInfo())
	if err != nil {
		return criinfo.Info{}, &Error{Endpoint: c.endpoint, RPC: rpcStatus, Err: err}
	}
	if rt := runtimeName(v.GetRuntimeName()); rt != criinfo.RuntimeUnknown {
		info.Runtime = rt
	}
	if strings.EqualFold(v.GetRuntimeName(), "docker") {
		// cri-dockerd names Docker and gives Docker Engine's version;
		// its own appears nowhere in the answer (Version "0.1.0",
		// RuntimeApiVersion "v1": core/docker_service.go at v0.4.4,
		// TestLiveCRIDockerdVersion).
		info.EngineVersion = v.GetRuntimeVersion()
	} else {
		info.RuntimeVersion = v.GetRuntimeVersion()
	}
	return info, nil
}

// Images returns the images the runtime lists (ListImages without a filter),
// with the Pinned flags the runtime set itself.
func (c *Client) Images(ctx context.Context) ([]*runtimeapi.Image, error) {
	if err := c.usable(rpcListImages); err != nil {
		return nil, err
	}
	resp, err := c.images.ListImages(ctx, &runtimeapi.ListImagesRequest{})
	if err != nil {
		return nil, c.fail(ctx, rpcListImages, err)
	}
	return resp.GetImages(), nil
}

// ImageStatus returns the image the runtime finds under ref by its own
// lookup (ImageStatus with that exact string, no alias applied), or nil when
// it finds none. A runtime looks its sandbox image up this way: nil for the
// configured sandbox image means the runtime pulls it for the next pod.
func (c *Client) ImageStatus(ctx context.Context, ref string) (*runtimeapi.Image, error) {
	if err := c.usable(rpcImageStatus); err != nil {
		return nil, err
	}
	resp, err := c.images.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
	if err != nil {
		return nil, c.fail(ctx, rpcImageStatus, err)
	}
	return resp.GetImage(), nil
}

// Pull has the runtime pull ref through CRI (PullImage with that exact
// string and no credentials), which stores the image under that name and,
// where the runtime pins its configured sandbox image, pins it; it returns
// the image's ID. sandboxpin fix uses it to store the sandbox image under
// a newly configured name before the runtime restarts.
func (c *Client) Pull(ctx context.Context, ref string) (string, error) {
	if err := c.usable(rpcPullImage); err != nil {
		return "", err
	}
	resp, err := c.images.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
	if err != nil {
		return "", c.fail(ctx, rpcPullImage, err)
	}
	return resp.GetImageRef(), nil
}

// Query dials endpoint, returns its Info and closes the connection.
func Query(ctx context.Context, endpoint string) (criinfo.Info, error) {
	c, err := Dial(ctx, endpoint)
	if err != nil {
		return criinfo.Info{}, err
	}
	info, err := c.Info(ctx)
	if cerr := c.Close(); err == nil && cerr != nil {
		return criinfo.Info{}, &Error{Endpoint: endpoint, RPC: "close", Err: cerr}
	}
	return info, err
}
