// Package clustertest runs a real Kubernetes cluster for tests, as processes
// on temporary files: etcd, kube-apiserver (TLS, RBAC and the Node
// authorizer, the default admission plugins with Pod Security),
// kube-controller-manager and kube-scheduler, with certificates and
// kubeconfigs from kubeadm's own phases (`kubeadm init phase certs` and
// `kubeconfig`), and nodes: a kubelet and a containerd each, in a mount
// namespace of the node's own (its /etc, /var/lib/kubelet, /run), so that a
// DaemonSet's hostPath volumes see that node's files and sockets at their
// usual paths. Each node's /run/dbus/system_bus_socket is a bus with a
// stand-in for systemd's D-Bus API (internal/systemdtest) whose units
// containerd.service and kubelet.service restart the node's containerd
// (on the node's /etc/containerd/config.toml) and kubelet: it stands in
// for systemd executing units, which a test machine without systemd as
// its init cannot do; systemd's unit loading, job queue and restart
// policy stay untested. The kubernetes Service's ClusterIP is routed to
// the API server (iptables DNAT, what kube-proxy does for it), so that
// pods reach it with their in-cluster configuration; no other Service is.
// Beside them it runs the Prometheus Operator, a Prometheus
// server on the configuration the operator generates, and
// kube-state-metrics, all against the cluster's API server.
//
// Everything is built by scripts/deps.sh (as root) into
// $SANDBOXPIN_CACHE; the environment variables of Env name other builds.
// The cluster needs root, a network namespace of the test's own
// (critesttest.Isolate: the API server advertises an address that Start
// adds to its loopback interface, and the nodes' CNI bridges live there) and
// the Debian tools util-linux (unshare, nsenter, mount), iproute2, iptables
// and dbus-daemon.
//
// Nothing leaves the test's network namespace: no component is given an
// address outside it, and kubeadm's phases get --kubernetes-version so that
// they look nothing up.
package clustertest
