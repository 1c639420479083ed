package clustertest

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/sandboxpin/sandboxpin/internal/runtimetest"
)

// Client is a TLS client identity of the cluster's admin, in files, for
// programs that take certificate files rather than a kubeconfig.
type Client struct{ CA, Cert, Key string }

// AdminClient writes the admin kubeconfig's certificate and key into files.
func (cp *ControlPlane) AdminClient(t testing.TB) Client {
	t.Helper()
	b, err := os.ReadFile(cp.Admin)
	if err != nil {
		t.Fatalf("clustertest: %v", err)
	}
	var kc struct {
		Users []struct {
			User struct {
				Cert string `json:"client-certificate-data"`
				Key  string `json:"client-key-data"`
			} `json:"user"`
		} `json:"users"`
	}
	if err := yaml.Unmarshal(b, &kc); err != nil || len(kc.Users) != 1 {
		t.Fatalf("clustertest: %s: %v, %d users", cp.Admin, err, len(kc.Users))
	}
	c := Client{CA: filepath.Join(cp.Dir, "pki/ca.crt"), Cert: filepath.Join(cp.Dir, "admin-client.crt"), Key: filepath.Join(cp.Dir, "admin-client.key")}
	for path, data := range map[string]string{c.Cert: kc.Users[0].User.Cert, c.Key: kc.Users[0].User.Key} {
		pem, err := base64.StdEncoding.DecodeString(data)
		if err != nil {
			t.Fatalf("clustertest: %s: %v", cp.Admin, err)
		}
		if err := os.WriteFile(path, pem, 0o600); err != nil {
			t.Fatalf("clustertest: %v", err)
		}
	}
	return c
}

// StartOperator applies the Prometheus Operator's CRDs (server-side, as
// its documentation installs them) and runs the operator against the API
// server with the admin's certificate, its own web server on
// 127.0.0.1:8085.
func (cp *ControlPlane) StartOperator(t testing.TB) *Process {
	t.Helper()
	cp.MustKubectl(t, "apply", "--server-side", "-f", cp.bins.OperatorCRDs)
	cp.MustKubectl(t, "wait", "--for=condition=Established", "--timeout=60s", "-f", cp.bins.OperatorCRDs)
	c := cp.AdminClient(t)
	return startProcess(t, cp.Dir, "prometheus-operator", cp.bins.Operator,
		"-apiserver="+cp.Server, "-ca-file="+c.CA, "-cert-file="+c.Cert, "-key-file="+c.Key,
		"-web.listen-address=127.0.0.1:8085", "-log-level=info")
}

// StartKubeStateMetrics runs kube-state-metrics against the API server,
// its metrics on 127.0.0.1:port and its own on port+1.
func (cp *ControlPlane) StartKubeStateMetrics(t testing.TB, port int) *Process {
	t.Helper()
	return startProcess(t, cp.Dir, "kube-state-metrics", cp.bins.KubeStateMetrics,
		"--kubeconfig="+cp.Admin, "--host=127.0.0.1", fmt.Sprintf("--port=%d", port),
		"--telemetry-host=127.0.0.1", fmt.Sprintf("--telemetry-port=%d", port+1))
}

// GeneratedConfig returns what the operator generated for the Prometheus
// object namespace/name: prometheus.yaml from the Secret prometheus-NAME
// (gzipped, as the operator writes it), and the rule files of its rule
// ConfigMaps by directory (the ConfigMap's name) and file name. It waits
// until the Secret holds a configuration whose text contains want.
func (cp *ControlPlane) GeneratedConfig(t testing.TB, namespace, name, want string, timeout time.Duration) (string, map[string]map[string]string) {
	t.Helper()
	var config string
	cp.Wait(t, timeout, func(out string) bool {
		gz, err := base64.StdEncoding.DecodeString(strings.TrimSpace(out))
		if err != nil || len(gz) == 0 {
			return false
		}
		r, err := gzip.NewReader(bytes.NewReader(gz))
		if err != nil {
			return false
		}
		b, err := io.ReadAll(r)
		config = string(b)
		return err == nil && strings.Contains(config, want)
	}, "-n", namespace, "get", "secret", "prometheus-"+name, "-o", `jsonpath={.data.prometheus\.yaml\.gz}`)
	out := cp.MustKubectl(t, "-n", namespace, "get", "configmap", "-l", "prometheus-name="+name, "-o", "json")
	var list struct {
		Items []struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
			Data map[string]string `json:"data"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("clustertest: rule ConfigMaps: %v", err)
	}
	rules := map[string]map[string]string{}
	for _, cm := range list.Items {
		rules[cm.Metadata.Name] = cm.Data
	}
	return config, rules
}

// Prometheus is a running Prometheus server.
type Prometheus struct {
	*Process
	// URL is its address, http://IP:PORT: the API server's address, which
	// the pods reach too (a fixer's --prometheus-url).
	URL string
}

// ruleDir is where the operator's configuration expects the rule
// ConfigMaps (the mount path of its StatefulSet's rule volumes).
const ruleDir = "/etc/prometheus/rules/"

// StartPrometheus runs a Prometheus server on IP:port with config
// (the operator's, its rule_files moved from the StatefulSet's mount path
// to the directory this writes rules into, its variables substituted as
// the config reloader does) and waits until it is ready.
func (cp *ControlPlane) StartPrometheus(t testing.TB, config string, rules map[string]map[string]string, port int) *Prometheus {
	t.Helper()
	dir := filepath.Join(cp.Dir, "prometheus")
	for cm, files := range rules {
		for name, body := range files {
			writeFile(t, filepath.Join(dir, "rules", cm, name), body)
		}
	}
	config = strings.ReplaceAll(config, ruleDir, filepath.Join(dir, "rules")+"/")
	// What the config reloader of the operator's StatefulSet does before
	// Prometheus reads the file (--config-envsubst-file): $(VAR) becomes the
	// container's variable, SHARD (0 for one shard) and POD_NAME
	// (pkg/operator/config_reloader.go at v0.85.0).
	config = strings.NewReplacer("$(SHARD)", "0", "$(POD_NAME)", "prometheus-k8s-0").Replace(config)
	writeFile(t, filepath.Join(dir, "prometheus.yaml"), config)
	p := &Prometheus{URL: fmt.Sprintf("http://%s:%d", IP, port)}
	p.Process = startProcess(t, cp.Dir, "prometheus", cp.bins.Prometheus,
		"--config.file="+filepath.Join(dir, "prometheus.yaml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		fmt.Sprintf("--web.listen-address=%s:%d", IP, port))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := poll(ctx, 500*time.Millisecond, func() (bool, error) {
		_, err := p.get(ctx, "/-/ready")
		return err == nil, err
	}); err != nil {
		t.Fatalf("clustertest: Prometheus did not become ready: %v\n%s", err, tail(p.Log(), 8<<10))
	}
	return p
}

// get returns the body of a GET of path, or an error for a status other
// than 200.
func (p *Prometheus) get(ctx context.Context, path string) (string, error) {
	return runtimetest.Get(ctx, http.DefaultClient, p.URL+path)
}

// Get returns the body of GET path (such as /api/v1/targets).
func (p *Prometheus) Get(t testing.TB, path string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := p.get(ctx, path)
	if err != nil {
		t.Fatalf("clustertest: %v", err)
	}
	return out
}

// Sample is one series of a query's instant vector.
type Sample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

// Query evaluates an instant query and returns its vector.
func (p *Prometheus) Query(t testing.TB, q string) []Sample {
	t.Helper()
	body := p.Get(t, "/api/v1/query?query="+url.QueryEscape(q))
	var resp struct {
		Status string `json:"status"`
		Data   struct {
			ResultType string   `json:"resultType"`
			Result     []Sample `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &resp); err != nil || resp.Status != "success" || resp.Data.ResultType != "vector" {
		t.Fatalf("clustertest: query %s: %v: %s", q, err, body)
	}
	return resp.Data.Result
}

// WaitQuery evaluates q every 2 s until ok accepts its vector or timeout
// passes (then it fails t), and returns that vector.
func (p *Prometheus) WaitQuery(t testing.TB, timeout time.Duration, q string, ok func([]Sample) bool) []Sample {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		v := p.Query(t, q)
		if ok(v) {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("clustertest: %s after %v: %v", q, timeout, v)
		}
		time.Sleep(2 * time.Second)
	}
}
