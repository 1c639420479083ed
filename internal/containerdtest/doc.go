// Package containerdtest starts a real containerd for tests: on a temporary
// socket, with temporary root and state directories and a temporary config,
// stopped and removed when the test ends.
//
//	c := containerdtest.Start(t, containerdtest.V1, containerdtest.Options{
//		SandboxImage: "registry.k8s.io/pause:3.6",
//		Images:       []containerdtest.Image{{Names: []string{"registry.k8s.io/pause:3.6"}}},
//	})
//	client, err := cri.Dial(ctx, c.Endpoint)
//
// Five builds are supported ([Versions]): [V1] is containerd 1.6.20 as Debian
// packages it and [V17] containerd 1.7.35 built from source (config version 2,
// sandbox_image), [V2] containerd 2.2.10 (config version 3,
// pinned_images.sandbox), [V23] 2.3.7 and [V24] 2.4.2 (config version 4:
// pinned_images.sandbox, and the sockets under the
// io.containerd.server.v1.grpc and .ttrpc plugin tables, since version 4
// ignores a top-level [grpc] address). [V24Pin] is 2.4.2 with
// contrib/containerd/pin.patch (not in Versions: no release), and [V233]
// containerd 2.3.3 (not in Versions either: a second 2.3, kept for the
// sandbox image lookup it gets wrong, issue 40). All use the native snapshotter
// and get their images from OCI archives built in Go and loaded with
// `ctr images import --no-unpack`, so no network is needed.
//
// [V24Status] and [V24PinStatus] are 2.4.2 with
// contrib/containerd/status.patch, alone and after pin.patch (neither in
// Versions): they report the sandbox image in the CRI Status verbose info.
//
// # Pulls
//
// [Options].Registry names a plain-HTTP registry on loopback (the
// registrytest package serves one in memory) that containerd's CRI plugin
// pulls every registry's images from, through hosts.toml files under its
// registry config_path; the transfer service unpacks into the native
// snapshotter.
//
// # Pods
//
// An [Image] with an Executable is runnable: it holds that program as /pause
// and is unpacked on import. Pods also need [Options].RestrictOOMScoreAdj
// where the tests lack CAP_SYS_RESOURCE, and [Options].Offline keeps any
// pull they cause on the machine; [V24] runs them with its own
// containerd-shim-runc-v2, and [V23] and [V233] with the same one
// ([Version.Shim]).
//
// # Requirements
//
// The tests need root and the binaries (scripts/deps.sh installs and builds
// them and writes $SANDBOXPIN_CACHE/env.sh). They are found through environment
// variables, with these defaults:
//
//	SANDBOXPIN_CONTAINERD1     /usr/bin/containerd
//	SANDBOXPIN_CTR1            /usr/bin/ctr
//	SANDBOXPIN_CONTAINERD_1_7  $SANDBOXPIN_CACHE/containerd/v1.7.35/containerd
//	SANDBOXPIN_CONTAINERD2     $SANDBOXPIN_CACHE/containerd/v2.2.10/containerd
//	SANDBOXPIN_CONTAINERD_2_3  $SANDBOXPIN_CACHE/containerd/v2.3.7/containerd
//	SANDBOXPIN_CONTAINERD_2_3_3 $SANDBOXPIN_CACHE/containerd/v2.3.3/containerd
//	SANDBOXPIN_CONTAINERD_2_4  $SANDBOXPIN_CACHE/containerd/v2.4.2/containerd
//	SANDBOXPIN_CONTAINERD_2_4_PATCHED $SANDBOXPIN_CACHE/containerd-patched/v2.4.2/containerd
//	SANDBOXPIN_CONTAINERD_2_4_STATUS $SANDBOXPIN_CACHE/containerd-patched-status/v2.4.2/containerd
//	SANDBOXPIN_CONTAINERD_2_4_PIN_STATUS $SANDBOXPIN_CACHE/containerd-patched-pin+status/v2.4.2/containerd
//	SANDBOXPIN_CTR2            $SANDBOXPIN_CACHE/ctr/v2.4.2/ctr (for 1.7 and 2.x), else the ctr of V1
//	SANDBOXPIN_CONTAINERD_2_4_SHIM $SANDBOXPIN_CACHE/containerd-shim-runc-v2/v2.4.2/containerd-shim-runc-v2 (pods on V23, V233, V24 and the patched 2.4.2 builds)
//	SANDBOXPIN_CACHE           ${XDG_CACHE_HOME:-$HOME/.cache}/sandboxpin
//
// When something is missing the test is skipped with a message that says how to
// install it, unless SANDBOXPIN_REQUIRE_RUNTIMES=1, under which it fails (CI
// sets it).
//
// Disabled plugins keep each instance from touching the host beyond its
// temporary directory: /opt/containerd (opt), the NRI socket, tracing, and
// snapshotters that need kernel support.
package containerdtest
