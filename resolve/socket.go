package resolve

import (
	"context"
	"io/fs"
	"strings"

	"github.com/sandboxpin/sandboxpin/resolve/internal/config"
	"github.com/sandboxpin/sandboxpin/resolve/internal/nodefs"
)

// ContainerdEndpoint returns the CRI endpoint ("unix:///run/k8s/c.sock")
// that the node's containerd config under fsys names, and the file:line that
// names it; "" when no containerd config exists, every one disables CRI, or
// none sets the address (containerd then listens on its default,
// /run/containerd/containerd.sock). Configs are looked for where Resolve
// looks (RKE2, k3s, then the file containerd.service's --config names, else
// /etc/containerd/config.toml) with their imports.
//
// The address is [grpc] address in config versions 1–3 and
// [plugins."io.containerd.server.v1.grpc"] address in version 4, which
// ignores [grpc]: containerd then listens on its default (where this was
// read and seen: docs/release-facts.md, "Upstream history").
// A malformed file is a *ConfigError; a nil fsys or a root directory that is
// not there is an error wrapping [ErrNoRoot].
func ContainerdEndpoint(fsys fs.FS) (endpoint, origin string, err error) {
	endpoint, origin, err = containerdEndpoint(fsys)
	return endpoint, origin, exportErr(err)
}

func containerdEndpoint(fsys fs.FS) (endpoint, origin string, err error) {
	if err := checkRoot(fsys); err != nil {
		return "", "", err
	}
	// The same limits as Resolve: a hostile root cannot block or exhaust
	// memory here either.
	b := nodefs.NewBudget(context.Background(), fsys)
	locs, err := config.ContainerdLocationsOn(b.Source())
	if err := b.First(err); err != nil {
		return "", "", err
	}
	for _, loc := range locs {
		c, err := config.ReadContainerd(b.Source(), loc.Path, loc.Flavor)
		if err := b.First(err); err != nil {
			return "", "", err
		}
		if c == nil || c.Disabled != nil {
			continue
		}
		if c.Socket == nil {
			return "", "", nil
		}
		addr := c.Socket.Value
		if !strings.Contains(addr, "://") {
			addr = "unix://" + addr
		}
		return addr, c.Socket.Origin(), nil
	}
	return "", "", nil
}

// KubeletEndpoint returns the CRI endpoint the node's kubelet talks to, as
// its command line says (the last --container-runtime-endpoint, read as
// [Resolve] reads the kubelet's systemd unit, drop-ins and flag files), and
// where it says so; "" when nothing does. On a node whose kubelet goes
// through a CRI shim (deploy/systemd's drop-in) that is the shim's socket:
// the endpoint whose Image.pinned the kubelet's image GC obeys. The
// endpoint is as written: a path without "unix://" gets it. A malformed
// unit or flag file is a *ConfigError; a nil fsys or a root directory that
// is not there is an error wrapping [ErrNoRoot].
func KubeletEndpoint(fsys fs.FS) (endpoint, origin string, err error) {
	endpoint, origin, err = kubeletEndpoint(fsys)
	return endpoint, origin, exportErr(err)
}

func kubeletEndpoint(fsys fs.FS) (endpoint, origin string, err error) {
	if err := checkRoot(fsys); err != nil {
		return "", "", err
	}
	b := nodefs.NewBudget(context.Background(), fsys)
	k, err := config.ReadKubelet(b.Source())
	if err := b.First(err); err != nil {
		return "", "", err
	}
	if k == nil || k.Endpoint == nil || k.Endpoint.Value == "" {
		return "", "", nil
	}
	addr := k.Endpoint.Value
	if !strings.Contains(addr, "://") {
		addr = "unix://" + addr
	}
	return addr, k.Endpoint.Origin(), nil
}
