// Command sandboxpin tells which sandbox ("pause") image a Kubernetes node
// really uses and whether the container runtime pins it, so that the
// kubelet's image garbage collector leaves it alone.
//
// Usage:
//
//	sandboxpin resolve   [--root DIR] [--runtime-endpoint URL] [--runtime-version V] [--kubeadm-version V] [-o text|json|yaml]
//	sandboxpin check     [--pin PATTERN]... [--resolve] [--root DIR] [-o text|json|yaml] IMAGE...
//	sandboxpin normalize [--familiar] [-o text|json|yaml] REF...
//	sandboxpin audit     [--runtime-endpoint URL | --images FILE] [--root DIR] [version flags] [-o text|json|yaml|prometheus|summary]
//	sandboxpin serve     [--listen ADDR] [--interval D] [--min-interval D] [--runtime-endpoint URL] [--root DIR] [version flags]
//	sandboxpin shim      --listen unix:///path --runtime-endpoint URL [--pin PATTERN]... [--root DIR] [--metrics-listen ADDR]
//	sandboxpin prepull   [--root DIR] [--kubeadm-version V] [-o text|json|yaml]
//	sandboxpin fix       [--root DIR] [--runtime-endpoint URL | --images FILE] [version flags] [--write] [--backup-dir DIR]
//	sandboxpin rollout   [--mode plan|write] [--node NAME] [--root DIR] [version flags] [--window HH:MM-HH:MM] [--prometheus-url URL] [--once]
//	sandboxpin version   (or --version)
//	sandboxpin completion bash|zsh|fish
//
// The commands are built on spf13/cobra and pflag, as kubectl's are: help
// on stdout (exit 0), flags anywhere on the line, usage mistakes on stderr
// (exit 2). Exit codes: 0 success; 1 a verdict (an image is not pinned,
// the sandbox image is not protected); 2 an error (a usage mistake, an
// unreadable config, an unreachable runtime); 3 the sandbox image cannot be
// told (no runtime found, or none names it and its version is unknown).
//
// The version flags are resolve's: --runtime-version, --kubelet-version,
// --kubeadm-version and --kubeadm-config; resolve, prepull, audit and serve
// take them all.
//
// audit renders package audit's Verdict, and resolve the resolve.Result:
// the command keeps flags, I/O and rendering, and decides nothing by
// reading a message. audit --images reads what `crictl images -o json`
// printed on the node (audit.ReadImages), to audit offline beside --root;
// the runtime's own lookup of the configured name is then predicted by
// audit.PredictLookup, as package audit does for any offline caller.
//
// prepull prints, one a line, every exact image name that something on the
// node looks up: the runtime's sandbox image as configured, kubeadm's pause
// image as kubeadm names it, the runtime's exact pinned images. Two spellings
// of one image (k8s.gcr.io/pause:3.10.1 and registry.k8s.io/pause:3.10.1)
// are both printed, since each consumer asks for its own; a note on stderr
// says how to pull the image once and store it under both names.
//
// With no --root and no --runtime-endpoint, resolve and audit inspect the
// real node: the files under / and the first CRI socket that exists of the
// kubelet's own (the last --container-runtime-endpoint of the command line
// its systemd unit and drop-ins build: a CRI shim's socket when the kubelet
// goes through one, whose Image.pinned its image GC obeys), the one
// containerd's config names ([grpc] address in config versions 1–3,
// [plugins."io.containerd.server.v1.grpc"] address in version 4, which
// containerd 2.3 and later write), and the default CRI sockets (containerd,
// CRI-O, cri-dockerd), as crictl does. With --root the same sockets are
// looked for under the root (/var/run as /run): a node's root mounted in a
// pod (deploy/kubernetes) is asked through its own sockets; a node image
// has none, and is read offline.
//
// resolve reads containerd config versions 1 to 4 as the node's containerd
// does: 2.0–2.2 ignore a sandbox_image under [plugins."io.containerd.grpc.v1.cri"]
// in a version 3 file, 2.3 and later migrate it over pinned_images.sandbox;
// give --runtime-version (or a socket) when the answer depends on it. For
// cri-dockerd, the socket's reported version is Docker Engine's and its
// binary's Go build info states none when it is built as its Makefile builds
// it: on the live node (no --root) sandboxpin runs the cri-dockerd that
// cri-docker.service starts with --version; with --root it runs nothing, and
// --runtime-version gives cri-dockerd's own.
//
// --root DIR is read like a chroot (resolve.DirFS): a node image's symbolic
// links, absolute or not, resolve inside DIR and never onto the host this
// runs on; FIFOs, sockets and devices are refused, and every read is
// bounded. SIGINT and SIGTERM cancel the command, which then ends within a
// second whatever it is doing (exit 2); shim gives the calls in flight
// its shutdown grace (5 s) first, and exits 0 after a clean stop.
//
// shim is the CRI proxy of package crishim: point the kubelet at --listen
// and it forwards every call to the runtime, setting Image.Pinned on the
// node's sandbox image and the --pin patterns. SIGHUP reloads its rules.
// deploy/systemd holds its unit and a kubelet drop-in.
package main
