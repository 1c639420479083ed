package clustertest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Addresses of the control plane, in the test's network namespace.
const (
	// IP is the API server's advertised address and the nodes' InternalIP:
	// an address that Start adds to the loopback interface of the test's
	// network namespace, outside 127.0.0.0/8 (the API server refuses to
	// publish a loopback address as the kubernetes Service's endpoint).
	IP = "10.200.0.1"
	// APIPort is the API server's secure port.
	APIPort = 6443
	// ServiceCIDR is the Services' range (kubeadm's default).
	ServiceCIDR = "10.96.0.0/12"
	etcdClient  = "https://127.0.0.1:2379"
	etcdPeer    = "http://127.0.0.1:2380"
)

// startTimeout bounds the wait for the API server's /readyz.
const startTimeout = 3 * time.Minute

// ControlPlane is a running control plane.
type ControlPlane struct {
	// Dir holds pki/, the kubeconfigs, etcd's data and the logs.
	Dir string
	// Server is the API server's URL; Admin the path of a kubeconfig in
	// system:masters (kubeadm's super-admin.conf).
	Server, Admin string
	// ServiceIP and ServicePort are the kubernetes Service's ClusterIP and
	// port, routed to the API server (see routeService).
	ServiceIP, ServicePort string
	bins                   Binaries
	// The processes, in the order they started.
	Procs []*Process
}

// Start generates the certificates and kubeconfigs with kubeadm, then starts
// etcd, kube-apiserver, kube-controller-manager and kube-scheduler, and
// waits until the API server is ready. The test must run in a network
// namespace of its own (critesttest.Isolate). t.Cleanup stops everything.
func Start(t testing.TB) *ControlPlane {
	t.Helper()
	Require(t)
	dir, err := os.MkdirTemp("/tmp", "sbc")
	if err != nil {
		t.Fatalf("clustertest: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	cp := &ControlPlane{Dir: dir, bins: Find(), Server: fmt.Sprintf("https://%s:%d", IP, APIPort), Admin: filepath.Join(dir, "super-admin.conf")}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	// Loopback holds IP too (this machine's kernel has no dummy
	// interfaces); it goes with the network namespace.
	if _, err := run(ctx, "ip", "addr", "add", IP+"/32", "dev", "lo"); err != nil {
		t.Fatalf("clustertest: %v", err)
	}
	pki := filepath.Join(dir, "pki")
	common := []string{"--cert-dir", pki, "--apiserver-advertise-address", IP, "--kubernetes-version", KubernetesVersion}
	for _, phase := range [][]string{
		{"certs", "all", "--service-cidr", ServiceCIDR},
		// super-admin.conf: system:masters. admin.conf's group
		// (kubeadm:cluster-admins) is bound to cluster-admin only by
		// kubeadm init's later phases.
		{"kubeconfig", "super-admin", "--kubeconfig-dir", dir, "--apiserver-bind-port", fmt.Sprint(APIPort)},
		{"kubeconfig", "controller-manager", "--kubeconfig-dir", dir, "--apiserver-bind-port", fmt.Sprint(APIPort)},
		{"kubeconfig", "scheduler", "--kubeconfig-dir", dir, "--apiserver-bind-port", fmt.Sprint(APIPort)},
	} {
		args := append([]string{cp.bins.Kubeadm, "init", "phase"}, phase...)
		if _, err := run(ctx, append(args, common...)...); err != nil {
			t.Fatalf("clustertest: %v", err)
		}
	}
	p := func(name string) string { return filepath.Join(pki, name) }
	cp.Procs = append(cp.Procs, startProcess(t, dir, "etcd", cp.bins.Etcd,
		"--name=cp", "--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+etcdClient, "--advertise-client-urls="+etcdClient,
		"--listen-peer-urls="+etcdPeer, "--initial-advertise-peer-urls="+etcdPeer, "--initial-cluster=cp="+etcdPeer,
		"--listen-metrics-urls=http://127.0.0.1:2381",
		"--cert-file="+p("etcd/server.crt"), "--key-file="+p("etcd/server.key"),
		"--client-cert-auth=true", "--trusted-ca-file="+p("etcd/ca.crt"),
		// A test's cluster lives minutes: no fsync (etcd's own flag for
		// such uses).
		"--unsafe-no-fsync=true"))
	// The flags of kubeadm's static pod manifests for the same components
	// (cmd/kubeadm/app/phases/controlplane/manifests.go at v1.37.2), with the
	// paths of this directory and no leader election (one instance).
	cp.Procs = append(cp.Procs, startProcess(t, dir, "kube-apiserver", cp.bins.APIServer,
		"--advertise-address="+IP, fmt.Sprintf("--secure-port=%d", APIPort),
		"--allow-privileged=true", "--authorization-mode=Node,RBAC",
		"--client-ca-file="+p("ca.crt"), "--enable-admission-plugins=NodeRestriction",
		"--etcd-servers="+etcdClient, "--etcd-cafile="+p("etcd/ca.crt"),
		"--etcd-certfile="+p("apiserver-etcd-client.crt"), "--etcd-keyfile="+p("apiserver-etcd-client.key"),
		"--kubelet-client-certificate="+p("apiserver-kubelet-client.crt"), "--kubelet-client-key="+p("apiserver-kubelet-client.key"),
		"--kubelet-preferred-address-types=InternalIP,Hostname",
		"--proxy-client-cert-file="+p("front-proxy-client.crt"), "--proxy-client-key-file="+p("front-proxy-client.key"),
		"--requestheader-allowed-names=front-proxy-client", "--requestheader-client-ca-file="+p("front-proxy-ca.crt"),
		"--requestheader-extra-headers-prefix=X-Remote-Extra-", "--requestheader-group-headers=X-Remote-Group",
		"--requestheader-username-headers=X-Remote-User",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+p("sa.pub"), "--service-account-signing-key-file="+p("sa.key"),
		"--service-cluster-ip-range="+ServiceCIDR,
		"--tls-cert-file="+p("apiserver.crt"), "--tls-private-key-file="+p("apiserver.key")))
	kc := func(name string) []string {
		f := filepath.Join(dir, name)
		return []string{"--kubeconfig=" + f, "--authentication-kubeconfig=" + f, "--authorization-kubeconfig=" + f, "--bind-address=127.0.0.1", "--leader-elect=false"}
	}
	cp.Procs = append(cp.Procs, startProcess(t, dir, "kube-controller-manager", append(append([]string{cp.bins.ControllerManager}, kc("controller-manager.conf")...),
		"--client-ca-file="+p("ca.crt"), "--cluster-name=kubernetes",
		"--cluster-signing-cert-file="+p("ca.crt"), "--cluster-signing-key-file="+p("ca.key"),
		"--controllers=*,bootstrapsigner,tokencleaner", "--requestheader-client-ca-file="+p("front-proxy-ca.crt"),
		"--root-ca-file="+p("ca.crt"), "--service-account-private-key-file="+p("sa.key"),
		"--use-service-account-credentials=true")...))
	cp.Procs = append(cp.Procs, startProcess(t, dir, "kube-scheduler", append([]string{cp.bins.Scheduler}, kc("scheduler.conf")...)...))
	err = poll(ctx, time.Second, func() (bool, error) {
		for _, proc := range cp.Procs {
			select {
			case <-proc.Exited():
				return false, fmt.Errorf("%s exited:\n%s", proc.Name, tail(proc.Log(), 4<<10))
			default:
			}
		}
		out, err := cp.Kubectl(ctx, "get", "--raw", "/readyz")
		return err == nil && strings.TrimSpace(out) == "ok", err
	})
	if err != nil {
		t.Fatalf("clustertest: the API server did not become ready: %v", err)
	}
	if err := cp.routeService(ctx); err != nil {
		t.Fatalf("clustertest: %v", err)
	}
	return cp
}

// routeService does for the kubernetes Service (default/kubernetes) what
// kube-proxy does on a node, and nothing more: TCP to its ClusterIP and
// port, from the pods (PREROUTING) and from the test's network namespace
// (OUTPUT, hostNetwork pods), goes to the API server at IP:APIPort. So a
// pod's in-cluster client (client-go's rest.InClusterConfig, from the
// KUBERNETES_SERVICE_HOST and _PORT the kubelet sets) reaches the API
// server, whose certificate names the ClusterIP (kubeadm's `certs`
// phase, from --service-cidr). The ClusterIP also goes on loopback, so
// that a connection from this namespace has a route before OUTPUT
// rewrites it. Other Services' ClusterIPs stay unrouted (no kube-proxy,
// no DNS). The address and port are the Service's own, read from the API
// server once its controller created it.
func (cp *ControlPlane) routeService(ctx context.Context) error {
	var ip, port string
	err := poll(ctx, time.Second, func() (bool, error) {
		out, err := cp.Kubectl(ctx, "-n", "default", "get", "service", "kubernetes", "-o", `jsonpath={.spec.clusterIP} {.spec.ports[?(@.name=="https")].port}`)
		f := strings.Fields(out)
		if err != nil || len(f) != 2 {
			return false, err
		}
		ip, port = f[0], f[1]
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("the kubernetes Service: %w", err)
	}
	cp.ServiceIP, cp.ServicePort = ip, port
	if _, err := run(ctx, "ip", "addr", "add", ip+"/32", "dev", "lo"); err != nil {
		return err
	}
	for _, chain := range []string{"PREROUTING", "OUTPUT"} {
		if _, err := run(ctx, "iptables", "-t", "nat", "-A", chain, "-d", ip+"/32", "-p", "tcp", "--dport", port,
			"-j", "DNAT", "--to-destination", fmt.Sprintf("%s:%d", IP, APIPort)); err != nil {
			return err
		}
	}
	return nil
}

// Kubectl runs kubectl as the cluster's admin and returns its output.
func (cp *ControlPlane) Kubectl(ctx context.Context, args ...string) (string, error) {
	return run(ctx, append([]string{cp.bins.Kubectl, "--kubeconfig=" + cp.Admin}, args...)...)
}

// MustKubectl runs kubectl and fails t on an error.
func (cp *ControlPlane) MustKubectl(t testing.TB, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := cp.Kubectl(ctx, args...)
	if err != nil {
		t.Fatalf("clustertest: %v", err)
	}
	return out
}

// Wait runs kubectl with args every 2 s until its output satisfies ok or
// timeout passes; it returns the last output.
func (cp *ControlPlane) Wait(t testing.TB, timeout time.Duration, ok func(string) bool, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var out string
	err := poll(ctx, 2*time.Second, func() (bool, error) {
		var err error
		out, err = cp.Kubectl(ctx, args...)
		return err == nil && ok(out), err
	})
	if err != nil {
		t.Fatalf("clustertest: kubectl %s: %v; last output:\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// nodeKubeconfig writes the kubelet.conf of node name (a client
// certificate for system:node:name, from kubeadm) into dir.
func (cp *ControlPlane) nodeKubeconfig(ctx context.Context, name, dir string) error {
	_, err := run(ctx, cp.bins.Kubeadm, "init", "phase", "kubeconfig", "kubelet", "--node-name", name,
		"--kubeconfig-dir", dir, "--cert-dir", filepath.Join(cp.Dir, "pki"),
		"--apiserver-advertise-address", IP, "--apiserver-bind-port", fmt.Sprint(APIPort), "--kubernetes-version", KubernetesVersion)
	return err
}
