// Package cridockerdtest starts a real cri-dockerd in front of a real Docker
// Engine for tests, without touching the host: a temporary directory holds
// Docker's data root and exec root, both sockets, cri-dockerd's root
// directory, its CNI directories and a node root (Dir/etc/systemd/system/
// cri-docker.service, Dir/usr/bin/cri-dockerd) that resolve can read as the
// node's file system.
//
// Docker Engine is Debian's docker.io (20.10.24), which starts its own
// containerd (Debian's 1.6.20). dockerd runs in a private mount namespace
// whose /etc/docker, /run and /opt are tmpfs (it writes /etc/docker/key.json,
// /run/docker/plugins and, through its containerd, /opt/containerd whatever
// its flags say), and in a network namespace of its own that holds only
// loopback, so that a pull fails at once and nothing leaves the machine.
//
// cri-dockerd runs in a network, mount and PID namespace of its own: at start
// and every 5 minutes it sets oom_score_adj -999 on every process named
// dockerd or containerd that it can see (ensureDockerInContainer in
// containermanager/helpers_linux.go at v0.4.4, dockerOOMScoreAdj in
// container_manager_linux.go), which would reach other tests' runtimes.
//
// Images are loaded offline with `docker load` from archives written by
// [containerdtest.WriteDockerArchive]: Docker 20.10 loads no OCI layout.
// `docker load` records no repo digest, so an image can only be named by
// tag or ID here; pulling by digest needs a registry.
//
// Pods cannot run here, and nothing can make them: cri-dockerd gives every
// sandbox oom_score_adj -998 (defaultSandboxOOMAdj in core/sandbox_helpers.go
// at v0.3.14 and v0.4.4, with no flag in config/options.go), Docker Engine
// 20.10.24 passes it to the OCI spec as it is (WithOOMScore in
// daemon/oci_linux.go; daemon_unix.go checks only the range -1000..1000),
// and runc cannot write it without CAP_SYS_RESOURCE. RunPodSandbox then
// fails with "failed to create shim task: OCI runtime create failed: runc
// create failed: unable to start container process: can't get final
// child's PID from pipe: EOF" (TestStart). It pulls the sandbox image before
// that, so whether the image was found still shows.
//
// It needs root, and what scripts/deps.sh provides: dockerd and docker
// (Debian's docker.io; SANDBOXPIN_DOCKERD, SANDBOXPIN_DOCKER) and each
// cri-dockerd build (SANDBOXPIN_CRI_DOCKERD_0_3_14, SANDBOXPIN_CRI_DOCKERD_0_4_4,
// and SANDBOXPIN_CRI_DOCKERD_PATCHED for [V044Pin], v0.4.4 with
// contrib/cri-dockerd/pin.patch).
// Without them [Start] skips the test, or fails it when
// SANDBOXPIN_REQUIRE_RUNTIMES=1; under -short it always skips.
package cridockerdtest
