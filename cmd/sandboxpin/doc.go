// Command sandboxpin tells which sandbox ("pause") image a Kubernetes node
// really uses and whether the container runtime pins it, so that the
// kubelet's image garbage collector leaves it alone.
//
// Usage:
//
//	sandboxpin resolve  [--root DIR] [--runtime-endpoint URL] [--runtime-version V] [--kubeadm-version V] [-o text|json]
//	sandboxpin check    [--pin PATTERN]... [--resolve] [--root DIR] IMAGE...
//	sandboxpin normalize REF...
//	sandboxpin audit    [--runtime-endpoint URL] [--root DIR] [-o text|prometheus|summary]
//	sandboxpin serve    [--listen ADDR] [--interval D] [--min-interval D] [--runtime-endpoint URL] [--root DIR]
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
package main
