package main

import (
	"context"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/sandboxpin/sandboxpin/remedy"
	"github.com/sandboxpin/sandboxpin/resolve"
)

func writeFile(t *testing.T, name, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(name), 0o750))
	require.NoError(t, os.WriteFile(name, []byte(content), 0o600))
}

func TestLabelArgs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		command string
		name    string
		labels  map[string]string
		err     bool
	}{
		{command: "ctr -n k8s.io images label registry.k8s.io/pause:3.10 io.cri-containerd.pinned=pinned",
			name: "registry.k8s.io/pause:3.10", labels: map[string]string{"io.cri-containerd.pinned": "pinned"}},
		{command: "k3s ctr -n k8s.io images label docker.io/rancher/mirrored-pause:3.6 io.cri-containerd.pinned=pinned io.cattle.k3s.pinned=",
			name: "docker.io/rancher/mirrored-pause:3.6", labels: map[string]string{"io.cri-containerd.pinned": "pinned", "io.cattle.k3s.pinned": ""}},
		{command: "/var/lib/rancher/rke2/bin/ctr --address /run/k3s/containerd/containerd.sock -n k8s.io images label p:1 io.cri-containerd.pinned=pinned io.cattle.rke2.pinned=",
			name: "p:1", labels: map[string]string{"io.cri-containerd.pinned": "pinned", "io.cattle.rke2.pinned": ""}},
		{command: "ctr images label p:1 io.cri-containerd.pinned=pinned", err: true}, // the default namespace, not CRI's
		{command: "ctr -n k8s.io images label p:1", err: true},
		{command: "ctr -n k8s.io images label p:1 pinned", err: true},
		{command: "ctr -n k8s.io images label p:1 =pinned", err: true},
		{command: "crictl pull p:1", err: true},
		{command: "", err: true},
	}
	for _, tt := range tests {
		t.Run(tt.command, func(t *testing.T) {
			t.Parallel()
			name, labels, err := labelArgs(tt.command)
			if tt.err {
				require.ErrorIs(t, err, errNoLabel)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.name, name)
			assert.Equal(t, tt.labels, labels)
		})
	}
}

func TestLabelStep(t *testing.T) {
	t.Parallel()
	step := remedy.Step{Action: resolve.ActionLabel, Component: resolve.ComponentContainerd, Image: "p:1",
		Commands: []string{"ctr -n k8s.io images label p:1 io.cri-containerd.pinned=pinned"}}
	assert.True(t, isLabelStep(step))
	other := step
	other.Image = "p:2" // the command labels another name
	assert.False(t, isLabelStep(other))
	other = step
	other.Component = resolve.ComponentCRIO
	assert.False(t, isLabelStep(other))
	other = step
	other.Action = resolve.ActionPull
	assert.False(t, isLabelStep(other))
}

// fakeImages is containerd's images service as far as labelImage uses it,
// read and written on the wire: images by name, each a name, labels and a
// target that must come back whole.
type fakeImages struct {
	mu     sync.Mutex
	labels map[string]map[string]string
	target []byte
	// targets are the images whose target is not target.
	targets map[string][]byte
}

func (f *fakeImages) handle(_ any, stream grpc.ServerStream) error {
	method, _ := grpc.MethodFromServerStream(stream)
	md, _ := metadata.FromIncomingContext(stream.Context())
	if ns := md.Get(containerdNamespaceHeader); len(ns) != 1 || ns[0] != containerdNamespace {
		return status.Errorf(codes.FailedPrecondition, "namespace %v", ns)
	}
	var req []byte
	if err := stream.RecvMsg(&req); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch method {
	case imagesGet:
		name, _, _ := bytesField(req, 1)
		labels, ok := f.labels[string(name)]
		if !ok {
			return status.Errorf(codes.NotFound, "image %q: not found", name)
		}
		img := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), string(name))
		for k, v := range labels {
			e := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), k)
			e = protowire.AppendString(protowire.AppendTag(e, 2, protowire.BytesType), v)
			img = protowire.AppendBytes(protowire.AppendTag(img, 2, protowire.BytesType), e)
		}
		target := f.target
		if t, ok := f.targets[string(name)]; ok {
			target = t
		}
		img = protowire.AppendBytes(protowire.AppendTag(img, 3, protowire.BytesType), target)
		resp := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), img)
		return stream.SendMsg(&resp)
	case imagesCreate:
		img, _, err := bytesField(req, 1)
		if err != nil {
			return status.Error(codes.InvalidArgument, err.Error())
		}
		name, _, _ := bytesField(img, 1)
		if _, ok := f.labels[string(name)]; ok {
			return status.Errorf(codes.AlreadyExists, "image %q: already exists", name)
		}
		if target, _, _ := bytesField(img, 3); string(target) != string(f.target) {
			return status.Errorf(codes.InvalidArgument, "image %q: target %q", name, target)
		}
		f.labels[string(name)] = mapEntries(img)
		resp := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), img)
		return stream.SendMsg(&resp)
	case imagesUpdate:
		img, _, err := bytesField(req, 1)
		if err != nil {
			return status.Error(codes.InvalidArgument, err.Error())
		}
		name, _, _ := bytesField(img, 1)
		if target, _, _ := bytesField(img, 3); string(target) != string(f.target) {
			return status.Errorf(codes.InvalidArgument, "image %q: target %q", name, target)
		}
		sent := mapEntries(img)
		var paths []string
		mask, _, _ := bytesField(req, 2)
		for b := mask; len(b) > 0; {
			_, _, l := protowire.ConsumeTag(b)
			b = b[l:]
			v, l := protowire.ConsumeBytes(b)
			paths = append(paths, string(v))
			b = b[l:]
		}
		labels := f.labels[string(name)]
		for _, p := range paths {
			k := p[len("labels."):]
			if sent[k] == "" {
				delete(labels, k)
			} else {
				labels[k] = sent[k]
			}
		}
		resp := []byte{}
		return stream.SendMsg(&resp)
	}
	return status.Errorf(codes.Unimplemented, "%s", method)
}

// mapEntries reads the labels (field 2, a map) of an Image message; the
// last entry of a key wins.
func mapEntries(img []byte) map[string]string {
	m := map[string]string{}
	for b := img; len(b) > 0; {
		n, typ, l := protowire.ConsumeTag(b)
		b = b[l:]
		l = protowire.ConsumeFieldValue(n, typ, b)
		if n == 2 {
			e, _ := protowire.ConsumeBytes(b)
			k, _, _ := bytesField(e, 1)
			v, _, _ := bytesField(e, 2)
			m[string(k)] = string(v)
		}
		b = b[l:]
	}
	return m
}

func serveImages(t *testing.T, f *fakeImages) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "containerd.sock")
	l, err := net.Listen("unix", path)
	require.NoError(t, err)
	srv := grpc.NewServer(grpc.UnknownServiceHandler(f.handle), grpc.ForceServerCodec(rawCodec{}))
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	return "unix://" + path
}

// TestLabelImage: the label set and k3s's removed on the image stored under
// the name, its other labels and its target kept, in CRI's namespace.
func TestLabelImage(t *testing.T) {
	t.Parallel()
	const name = "docker.io/rancher/mirrored-pause:3.6"
	f := &fakeImages{target: []byte("\x0a\x05media"), labels: map[string]map[string]string{
		name: {"io.cri-containerd.image": "managed", "io.cattle.k3s.pinned": "pinned"},
	}}
	endpoint := serveImages(t, f)
	require.NoError(t, labelImage(t.Context(), endpoint, name, map[string]string{"io.cri-containerd.pinned": "pinned", "io.cattle.k3s.pinned": ""}))
	assert.Equal(t, map[string]string{"io.cri-containerd.image": "managed", "io.cri-containerd.pinned": "pinned"}, f.labels[name])

	err := labelImage(t.Context(), endpoint, "p:absent", map[string]string{"io.cri-containerd.pinned": "pinned"})
	require.Error(t, err)
	assert.Equal(t, codes.NotFound, status.Code(err))
	assert.Contains(t, err.Error(), "labelling p:absent through containerd's images API on "+endpoint)

	err = labelImage(t.Context(), "tcp://127.0.0.1:1", name, nil)
	assert.ErrorContains(t, err, "not a unix:// socket")

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	assert.Error(t, labelImage(ctx, endpoint, name, map[string]string{"io.cri-containerd.pinned": "pinned"}))
}

// TestTagImage: the image stored as one name stored under another, its
// target and labels copied; a name stored already, or one absent, is an
// error that names both.
func TestTagImage(t *testing.T) {
	t.Parallel()
	const from, name = "k8s.gcr.io/pause:3.10.1", "registry.k8s.io/pause:3.10.1"
	f := &fakeImages{target: []byte("\x0a\x05media\x12\x0fsha256:0123abcd"), labels: map[string]map[string]string{
		from: {"io.cri-containerd.image": "managed"},
	}}
	endpoint := serveImages(t, f)
	require.NoError(t, tagImage(t.Context(), endpoint, from, name))
	assert.Equal(t, map[string]string{"io.cri-containerd.image": "managed"}, f.labels[name])
	assert.Equal(t, map[string]string{"io.cri-containerd.image": "managed"}, f.labels[from])

	// Stored under name already, the same image: done.
	require.NoError(t, tagImage(t.Context(), endpoint, from, name))
	// Stored under name already, another image: an error.
	f.mu.Lock()
	f.targets = map[string][]byte{"p:other": []byte("\x0a\x05media\x12\x0fsha256:4567cdef"),
		"p:same": []byte("\x0a\x05media\x12\x0fsha256:0123abcd\x2a\x06\x0a\x01k\x12\x01v")} // an annotation more
	f.labels["p:other"] = map[string]string{}
	f.labels["p:same"] = map[string]string{}
	f.mu.Unlock()
	require.NoError(t, tagImage(t.Context(), endpoint, from, "p:same"), "the same digest, other annotations: the same image")
	err := tagImage(t.Context(), endpoint, from, "p:other")
	assert.Equal(t, codes.AlreadyExists, status.Code(err))
	assert.ErrorContains(t, err, "tagging "+from+" as p:other through containerd's images API on "+endpoint)
	assert.ErrorContains(t, err, "as another image")
	err = tagImage(t.Context(), endpoint, "p:absent", "p:new")
	assert.Equal(t, codes.NotFound, status.Code(err))
	assert.NotContains(t, f.labels, "p:new")
}

func TestBytesField(t *testing.T) {
	t.Parallel()
	b := protowire.AppendVarint(protowire.AppendTag(nil, 4, protowire.VarintType), 7)
	b = protowire.AppendString(protowire.AppendTag(b, 1, protowire.BytesType), "first")
	b = protowire.AppendString(protowire.AppendTag(b, 1, protowire.BytesType), "last")
	v, ok, err := bytesField(b, 1)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, "last", string(v))
	_, ok, err = bytesField(b, 2)
	require.NoError(t, err)
	assert.False(t, ok)
	_, _, err = bytesField(b[:len(b)-1], 1)
	assert.Error(t, err, "a truncated message")
}

// FuzzLabelArgs: a command is read without a panic, and one that reads as a
// label step reads the same once written back as remedy writes it.
func FuzzLabelArgs(f *testing.F) {
	f.Add("ctr -n k8s.io images label registry.k8s.io/pause:3.10 io.cri-containerd.pinned=pinned")
	f.Add("k3s ctr -n k8s.io images label docker.io/rancher/mirrored-pause:3.6 io.cri-containerd.pinned=pinned io.cattle.k3s.pinned=")
	f.Add("ctr -n k8s.io images label p:1 a=b=c")
	f.Add("images label")
	f.Fuzz(func(t *testing.T, command string) {
		name, labels, err := labelArgs(command)
		if err != nil {
			require.ErrorIs(t, err, errNoLabel)
			return
		}
		require.NotEmpty(t, name)
		require.NotEmpty(t, labels)
		again := "ctr -n k8s.io images label " + name
		for _, k := range slices.Sorted(maps.Keys(labels)) {
			require.NotEmpty(t, k)
			again += " " + k + "=" + labels[k]
		}
		name2, labels2, err := labelArgs(again)
		require.NoError(t, err, "%q", again)
		assert.Equal(t, name, name2)
		assert.Equal(t, labels, labels2)
	})
}

// FuzzBytesField: a message off the wire is read without a panic, and a
// field found is one a writer of that field reads back.
func FuzzBytesField(f *testing.F) {
	img := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "registry.k8s.io/pause:3.10")
	f.Add(protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), img))
	f.Add([]byte{0x0a, 0xff})
	f.Add([]byte{0x08, 0x96, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		v, ok, err := bytesField(b, 1)
		if err != nil || !ok {
			assert.Nil(t, v)
			return
		}
		again := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), v)
		v2, ok2, err := bytesField(again, 1)
		require.NoError(t, err)
		assert.True(t, ok2)
		assert.Equal(t, v, v2)
	})
}
