package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/sandboxpin/sandboxpin/criinfo/cri"
	"github.com/sandboxpin/sandboxpin/resolve"
)

// dialTimeout bounds every conversation with a runtime socket.
const dialTimeout = 10 * time.Second

// nodeFlags are the flags that say which node to inspect.
type nodeFlags struct {
	root           string
	endpoint       string
	kubeadmVersion string
	kubeletVersion string
	kubeadmConfig  string
	runtimeVersion string
	images         string // audit --images: crictl's JSON, for an offline audit
}

// register adds the flags that name the node to fs; with versions, also
// those of the kubelet's and kubeadm's versions and kubeadm's config, which
// resolve, prepull, audit and serve take (one registration for them all).
func (n *nodeFlags) register(fs *pflag.FlagSet, versions bool) {
	fs.StringVar(&n.root, "root", "", "the node's root file system `DIR`, read like a chroot (default /)")
	fs.StringVar(&n.endpoint, "runtime-endpoint", "", "the CRI socket `URL` to ask, unix:///path or /path (default: the first that exists on the node, under --root: the kubelet's own --container-runtime-endpoint, the socket containerd's config names, the default sockets)")
	fs.StringVar(&n.runtimeVersion, "runtime-version", "", "the runtime's `VERSION`, such as 2.3.7, for its built-in default, config rules and pinning; for cri-dockerd, whose socket reports Docker Engine's version, its own (as cri-dockerd --version prints it)")
	if versions {
		fs.StringVar(&n.kubeadmVersion, "kubeadm-version", "", "the `VERSION` of the kubeadm that installs the node, such as v1.34.1")
		fs.StringVar(&n.kubeletVersion, "kubelet-version", "", "the kubelet's `VERSION`, such as v1.34.1")
		fs.StringVar(&n.kubeadmConfig, "kubeadm-config", "", "a kubeadm ClusterConfiguration `FILE` inside the root")
	}
}

// endpointToAsk returns the socket to ask: --runtime-endpoint, else the
// first of these that exists on the node (under --root when given): the
// kubelet's own (a CRI shim's, when the kubelet goes through one), the one
// containerd's config names, the default sockets; "" when none does.
func (n *nodeFlags) endpointToAsk() string {
	if n.endpoint != "" {
		return n.endpoint
	}
	return firstEndpoint(n.rootFS(), n.root, cri.DefaultEndpoints())
}

// firstEndpoint returns the first of these CRI sockets that exists: the
// kubelet's (the last --container-runtime-endpoint of the command line its
// systemd unit builds: the socket whose Image.pinned its image GC obeys,
// a shim's in front of the runtime included), the one the containerd
// config names ([grpc] address in config versions 1–3, the
// io.containerd.server.v1.grpc plugin's address in version 4), then each of
// defaults; "" when none exists. The node's files are read from root; with
// dir (the --root directory) each socket's path is taken under dir, and
// /var/run as /run, its usual link (a link inside dir could point off the
// node). A file that cannot be read is passed over here; resolve reports it.
func firstEndpoint(root fs.FS, dir string, defaults []string) string {
	var endpoints []string
	for _, find := range []func(fs.FS) (string, string, error){resolve.KubeletEndpoint, resolve.ContainerdEndpoint} {
		if ep, _, err := find(root); err == nil && ep != "" {
			endpoints = append(endpoints, ep)
		}
	}
	return existingSocket(dir, append(endpoints, defaults...))
}

// existingSocket returns the first of these unix:// endpoints whose socket
// exists (under dir, when given), "" when none does.
func existingSocket(dir string, endpoints []string) string {
	for _, e := range endpoints {
		p, ok := strings.CutPrefix(e, "unix://")
		if !ok {
			continue
		}
		if dir != "" {
			if rest, ok := strings.CutPrefix(p, "/var/run/"); ok {
				p = "/run/" + rest
			}
			p = filepath.Join(dir, p)
		}
		if _, err := os.Stat(p); err == nil {
			return "unix://" + p
		}
	}
	return ""
}

// rootFS is the node's root, confined like a chroot: a node image's links
// resolve inside it, never onto the host this runs on.
func (n *nodeFlags) rootFS() fs.FS {
	if n.root == "" {
		return resolve.DirFS("/")
	}
	return resolve.DirFS(n.root)
}

// dial connects to the runtime, or returns nil when there is none to ask.
func (n *nodeFlags) dial(ctx context.Context) (*cri.Client, error) {
	e := n.endpointToAsk()
	if e == "" {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	return cri.Dial(ctx, e)
}

// resolve runs resolve.Resolve on the node the flags name, with the live
// runtime when there is one.
func (n *nodeFlags) resolve(ctx context.Context, client *cri.Client) (*resolve.Result, error) {
	if n.root != "" {
		// resolve.DirFS reports a missing root on every file; say it once.
		if fi, err := os.Stat(n.root); err != nil {
			return nil, fmt.Errorf("--root: %w", err)
		} else if !fi.IsDir() {
			return nil, fmt.Errorf("--root %s: not a directory", n.root)
		}
		if entries, err := os.ReadDir(n.root); err == nil && len(entries) == 0 && client == nil {
			return nil, fmt.Errorf("--root %s is an empty directory: give the node's root file system (a mounted disk or an unpacked image)", n.root)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	res, err := resolve.Resolve(ctx, n.options(client))
	if errors.Is(err, resolve.ErrNoSandboxImage) && res != nil {
		// The partial result: the commands print what was found and
		// exit 3 with the flag that would tell (unknown).
		return res, nil
	}
	return res, err
}

// options are the resolve.Options of the node the flags name, asking
// client (when not nil) as the live runtime.
func (n *nodeFlags) options(client *cri.Client) resolve.Options {
	opts := resolve.Options{
		Root:              n.rootFS(),
		KubeadmVersion:    n.kubeadmVersion,
		KubeletVersion:    n.kubeletVersion,
		KubeadmConfigPath: n.kubeadmConfig,
		RuntimeVersion:    n.runtimeVersion,
	}
	if client != nil {
		opts.Live = client
	}
	if n.root == "" {
		// The live node: its cri-dockerd may be run for its version.
		// Never in a --root, which may be an image from anywhere.
		opts.BinaryVersion = binaryVersion
	}
	return opts
}
