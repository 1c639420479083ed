// Package rollout rolls `sandboxpin fix` out over a cluster, one node at a
// time, on Kubernetes' own machinery: a node takes one of the cluster-wide
// [Lock]'s Leases before it writes, checks its [Gates] (no blocking alert
// firing in Prometheus, its Node Ready, a time window), and publishes what
// it plans and does on its Node ([Publisher]: annotations and Events). A
// failed fix sets the [Halt], which stops the rollout on every node until a
// person lifts it. [Systemd] restarts the units a fix names through
// systemd's D-Bus API.
//
// Every type here holds only its configuration: one value may be used from
// several goroutines. A zero field means "not given" (a Gates without a
// Node skips the Ready gate; the zero [Window] is always open), and names
// default to [DefaultLease]. Times are the node's clock: a Lease expires
// by its renewTime, so the nodes' clocks must agree to well within
// [Lock.Duration], as NTP keeps them.
//
// The node's side (plan, write, restart, check, restore) is the
// `sandboxpin rollout` command (cmd/sandboxpin); deploy/kubernetes/fix runs
// it as a DaemonSet. README.md, "Fix a fleet", says how to use it.
package rollout
