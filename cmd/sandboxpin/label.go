package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/sandboxpin/sandboxpin/remedy"
	"github.com/sandboxpin/sandboxpin/resolve"
)

// containerdNamespace is the namespace of the CRI plugin's images, and the
// gRPC metadata key that names a request's namespace (GRPCHeader,
// pkg/namespaces/grpc.go at v1.7.35 and v2.4.2).
const (
	containerdNamespace       = "k8s.io"
	containerdNamespaceHeader = "containerd-namespace"
)

// errNoLabel says a label step's command is not one this command takes.
var errNoLabel = errors.New("not a `ctr images label` command")

// labelArgs reads the image name and the labels of a label step's command
// as remedy writes it (`[k3s ]ctr [--address A] -n k8s.io images label
// NAME KEY=VALUE...`; an empty VALUE removes KEY).
func labelArgs(command string) (string, map[string]string, error) {
	f := strings.Fields(command)
	i := slices.Index(f, "images")
	if i < 0 || i+3 >= len(f) || f[i+1] != "label" || !slices.Contains(f[:i], "k8s.io") {
		return "", nil, fmt.Errorf("%q: %w", command, errNoLabel)
	}
	labels := map[string]string{}
	for _, kv := range f[i+3:] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return "", nil, fmt.Errorf("%q: label %q: %w", command, kv, errNoLabel)
		}
		labels[k] = v
	}
	return f[i+2], labels, nil
}

// labelStep is the image and labels of a label step this command takes:
// containerd's, with one command of labelArgs' form.
func labelStep(s remedy.Step) (string, map[string]string, bool) {
	if s.Action != resolve.ActionLabel || s.Component != resolve.ComponentContainerd || len(s.Commands) != 1 {
		return "", nil, false
	}
	name, labels, err := labelArgs(s.Commands[0])
	return name, labels, err == nil && name == s.Image
}

// The methods and field numbers of containerd's images service
// (api/services/images/v1/images.proto at v1.7.35 and v2.4.2): GetImageRequest
// {name 1}, GetImageResponse {image 1}, UpdateImageRequest {image 1,
// update_mask 2}, Image {name 1, labels 2 (a map: entries {key 1, value
// 2})}, google.protobuf.FieldMask {paths 1}. The messages are written and
// read on the wire here, not with containerd's generated types: the
// github.com/containerd/containerd module (v1.3.0 in this workspace's
// graph, through go-containerregistry's docker packages) holds the same
// package paths as github.com/containerd/containerd/api, and an import
// of one is ambiguous beside the other.
const (
	imagesGet    = "/containerd.services.images.v1.Images/Get"
	imagesCreate = "/containerd.services.images.v1.Images/Create"
	imagesUpdate = "/containerd.services.images.v1.Images/Update"
)

// rawCodec sends and receives messages as the bytes they are on the wire.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) {
	b, ok := v.(*[]byte)
	if !ok {
		return nil, fmt.Errorf("rawCodec: %T is not *[]byte", v)
	}
	return *b, nil
}

func (rawCodec) Unmarshal(data []byte, v any) error {
	b, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("rawCodec: %T is not *[]byte", v)
	}
	*b = append((*b)[:0], data...)
	return nil
}

// Name is "proto": the server decodes the bytes as the protobuf messages
// they are.
func (rawCodec) Name() string { return "proto" }

// bytesField returns the last occurrence of field num, of the bytes wire
// type, in the message b (the last wins, as protobuf's parsers merge).
func bytesField(b []byte, num protowire.Number) ([]byte, bool, error) {
	var (
		out   []byte
		found bool
	)
	for len(b) > 0 {
		n, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return nil, false, protowire.ParseError(l)
		}
		b = b[l:]
		if n == num && typ == protowire.BytesType {
			v, l := protowire.ConsumeBytes(b)
			if l < 0 {
				return nil, false, protowire.ParseError(l)
			}
			out, found = v, true
			b = b[l:]
			continue
		}
		l = protowire.ConsumeFieldValue(n, typ, b)
		if l < 0 {
			return nil, false, protowire.ParseError(l)
		}
		b = b[l:]
	}
	return out, found, nil
}

// labelImage sets (or, with an empty value, removes) labels on the image
// containerd stores as name in the CRI plugin's namespace, through
// containerd's images API on endpoint, as `ctr images label` does: an
// Update whose mask names each label ("labels.KEY"), which the metadata
// store applies key by key and where an empty value removes the key
// (metadata/images.go Update at v1.7.35, core/metadata/images.go at
// v2.4.2; the removal seen live with ctr in internal/containerdtest's
// TestPinnedLabel). The image is read first and sent whole with the
// labels' entries after its own (a map's last entry for a key wins), so
// that the store validates a complete record.
func labelImage(ctx context.Context, endpoint, name string, labels map[string]string) (err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("labelling %s through containerd's images API on %s: %w", name, endpoint, err)
		}
	}()
	return withImages(ctx, endpoint, func(call caller) error {
		img, err := getImage(call, name)
		if err != nil {
			return err
		}
		var mask []byte
		for _, k := range slices.Sorted(maps.Keys(labels)) {
			entry := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), k)
			entry = protowire.AppendString(protowire.AppendTag(entry, 2, protowire.BytesType), labels[k])
			img = protowire.AppendBytes(protowire.AppendTag(img, 2, protowire.BytesType), entry)
			mask = protowire.AppendString(protowire.AppendTag(mask, 1, protowire.BytesType), "labels."+k)
		}
		req := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), img)
		req = protowire.AppendBytes(protowire.AppendTag(req, 2, protowire.BytesType), mask)
		_, err = call(imagesUpdate, req)
		return err
	})
}

// tagImage stores the image containerd stores as from under name too, as
// `ctr -n k8s.io images tag FROM NAME` does (cmd/ctr/commands/images/tag.go
// at v1.7.35 and v2.4.2: the record read, its name replaced, created
// again): the same target, so the same image, without a registry; its
// labels come along. The CRI plugin learns the new name from the
// ImageCreate event.
func tagImage(ctx context.Context, endpoint, from, name string) (err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("tagging %s as %s through containerd's images API on %s: %w", from, name, endpoint, err)
		}
	}()
	return withImages(ctx, endpoint, func(call caller) error {
		img, err := getImage(call, from)
		if err != nil {
			return err
		}
		renamed := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), name)
		for b := img; len(b) > 0; {
			n, typ, l := protowire.ConsumeTag(b)
			if l < 0 {
				return protowire.ParseError(l)
			}
			fl := protowire.ConsumeFieldValue(n, typ, b[l:])
			if fl < 0 {
				return protowire.ParseError(fl)
			}
			if n != 1 {
				renamed = append(renamed, b[:l+fl]...)
			}
			b = b[l+fl:]
		}
		_, err = call(imagesCreate, protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), renamed))
		if status.Code(err) != codes.AlreadyExists {
			return err
		}
		// Stored under name already (by a tool the CRI plugin does not
		// list until it restarts, as ctr's import on 1.7): done when it is
		// the same image, the same target digest (the descriptor's
		// annotations differ between imports: ctr's name annotations).
		have, gerr := getImage(call, name)
		if gerr != nil {
			return errors.Join(err, gerr)
		}
		want, got := targetDigest(img), targetDigest(have)
		if want == "" || want != got {
			return fmt.Errorf("%w, as another image (%s, not %s)", err, got, want)
		}
		return nil
	})
}

// targetDigest is the digest of an Image message's target (Image.target 3,
// Descriptor.digest 2), "" when it has none.
func targetDigest(img []byte) string {
	target, _, err := bytesField(img, 3)
	if err != nil {
		return ""
	}
	d, _, err := bytesField(target, 2)
	if err != nil {
		return ""
	}
	return string(d)
}

// caller calls a method of containerd's images service with a request on
// the wire, and returns the response on the wire.
type caller func(method string, req []byte) ([]byte, error)

// withImages calls f with a caller of containerd's images service on
// endpoint, in the CRI plugin's namespace.
func withImages(ctx context.Context, endpoint string, f func(caller) error) error {
	path, ok := strings.CutPrefix(endpoint, "unix://")
	if !ok {
		return fmt.Errorf("%s is not a unix:// socket", endpoint)
	}
	conn, err := grpc.NewClient("passthrough:///containerd",
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		}))
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	ctx = metadata.AppendToOutgoingContext(ctx, containerdNamespaceHeader, containerdNamespace)
	return f(func(method string, req []byte) ([]byte, error) {
		var resp []byte
		err := conn.Invoke(ctx, method, &req, &resp, grpc.ForceCodec(rawCodec{}))
		return resp, err
	})
}

// getImage returns the record containerd stores as name (an Image message).
func getImage(call caller, name string) ([]byte, error) {
	resp, err := call(imagesGet, protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), name))
	if err != nil {
		return nil, err
	}
	img, ok, err := bytesField(resp, 1)
	if err != nil || !ok {
		return nil, cmp.Or(err, errors.New("no image in its answer"))
	}
	return slices.Clone(img), nil
}

// label takes the plan's label steps, after its pulls and before its
// restarts, in the plan's order: the label stays across a restart
// (TestPinnedLabel, internal/containerdtest).
func (fx *fixer) label(ctx context.Context, p *remedy.Plan) error {
	for i, s := range p.Steps {
		name, labels, ok := labelStep(s)
		if !ok || s.Done || s.Alternative {
			continue
		}
		if err := fx.labeller(ctx, name, labels); err != nil {
			return err
		}
		p.Steps[i].Done = true
		fx.log.Info("labelled", "image", name, "labels", labels)
	}
	return nil
}

// isLabelStep says s is a label step this command takes (labelStep).
func isLabelStep(s remedy.Step) bool {
	_, _, ok := labelStep(s)
	return ok
}

// containerdEndpoint is the socket of containerd's API: the address the
// node's containerd config names, else the CRI socket asked (containerd
// serves both on one).
func (n *nodeFlags) containerdEndpoint() string {
	var endpoints []string
	if ep, _, err := resolve.ContainerdEndpoint(n.rootFS()); err == nil && ep != "" {
		endpoints = append(endpoints, ep)
	}
	return cmp.Or(existingSocket(n.root, endpoints), n.endpointToAsk())
}
