// Package rollout rolls `sandboxpin fix` out over a cluster, one node at a
// time, on Kubernetes' own machinery: a node takes one of the cluster-wide
// [Lock]'s Leases before it writes, checks its [Gates] (no blocking alert
// firing in Prometheus, its Node Ready, a time window), and publishes what
// it plans and does on its Node ([Publisher]: annotations and Events). A
// failed fix sets the [Halt], which stops the rollout on every node until a
// person lifts it. [Systemd] restarts the units a fix names through
// systemd's D-Bus API.
//
// The node's side (plan, write, restart, check, restore) is the
// `sandboxpin rollout` command (cmd/sandboxpin); deploy/kubernetes/fix runs
// it as a DaemonSet. README.md, "Fix a fleet", says how to use it.
package rollout
