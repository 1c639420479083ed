// Package registrytest serves an in-memory OCI registry on loopback for live
// tests, and pushes [containerdtest.Image]s into it, so that a runtime can
// pull through CRI on a machine without a network:
//
//	reg := registrytest.Start(t)
//	reg.Push(t, "registry.k8s.io/pause:3.10.1", containerdtest.Image{Names: []string{"registry.k8s.io/pause:3.10.1"}})
//	ctrd := containerdtest.Start(t, containerdtest.V24, containerdtest.Options{Registry: reg.Addr})
//
// The registry is go-containerregistry's pkg/registry and the push its
// pkg/v1/remote. It serves every registry at once: a runtime configured with
// it as the mirror of registry.k8s.io and docker.io (containerdtest writes
// the hosts.toml files) asks it for the repository path without the domain,
// so [Registry.Push] stores "registry.k8s.io/pause:3.10.1" as "pause:3.10.1"
// and "docker.io/library/pause:3.10.1" as "library/pause:3.10.1". Two domains
// with one path share one repository.
package registrytest
