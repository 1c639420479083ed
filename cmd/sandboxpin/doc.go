// Command sandboxpin tells which sandbox ("pause") image a Kubernetes node
// really uses and whether the container runtime pins it, so that the
// kubelet's image garbage collector leaves it alone.
//
// Usage:
//
//	sandboxpin resolve  [--root DIR] [--runtime-endpoint URL] [--runtime-version V] [--kubeadm-version V] [-o text|json]
//	sandboxpin check    [--pin PATTERN]... [--resolve] [--root DIR] IMAGE...
//	sandboxpin normalize REF...
//	sandboxpin audit    [--runtime-endpoint URL] [--root DIR]
//	sandboxpin prepull  [--root DIR] [--kubeadm-version V]
//	sandboxpin version
//
// Exit codes: 0 success; 1 a check failed (an image is not pinned, the
// sandbox image is not protected); 2 an error (bad flags, unreadable
// config, unreachable runtime). Run "sandboxpin COMMAND --help" for the
// flags of each command.
//
// With no --root and no --runtime-endpoint, resolve and audit inspect the
// real node: the files under / and the first of the default CRI sockets
// that exists (containerd, CRI-O, cri-dockerd), as crictl does.
//
// --root DIR is read like a chroot (resolve.DirFS): a node image's symbolic
// links, absolute or not, resolve inside DIR and never onto the host this
// runs on; FIFOs, sockets and devices are refused, and every read is
// bounded. SIGINT and SIGTERM cancel the command, which then ends within a
// second whatever it is doing (exit 2).
package main
