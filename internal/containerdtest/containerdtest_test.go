package containerdtest

import (
	"strings"
	"testing"
)

func TestStart(t *testing.T) {
	t.Parallel()
	for _, v := range Versions() {
		t.Run(v.String(), func(t *testing.T) {
			t.Parallel()
			c := Start(t, v, Options{
				SandboxImage: "registry.k8s.io/pause:3.10.1",
				Images:       []Image{{Names: []string{"registry.k8s.io/pause:3.10.1"}}},
			})
			if c.Socket == "" || len(c.Socket) >= 100 {
				t.Errorf("Socket = %q, want a path shorter than 100 bytes", c.Socket)
			}
		})
	}
}

func TestConfig(t *testing.T) {
	t.Parallel()
	for _, v := range Versions() {
		t.Run(v.String(), func(t *testing.T) {
			t.Parallel()
			c := &Containerd{Version: v, Dir: "/tmp/x", Socket: "/tmp/x/c.sock"}
			cfg := c.config(Options{SandboxImage: "registry.k8s.io/pause:3.10.1"})
			want := map[int][]string{
				2: {"version = 2\n", "[grpc]\n  address = \"/tmp/x/c.sock\"", `sandbox_image = "registry.k8s.io/pause:3.10.1"`},
				3: {"version = 3\n", "[grpc]\n  address = \"/tmp/x/c.sock\"", `sandbox = "registry.k8s.io/pause:3.10.1"`},
				4: {"version = 4\n", "[plugins.'io.containerd.server.v1.grpc']\n  address = \"/tmp/x/c.sock\"",
					"[plugins.'io.containerd.server.v1.ttrpc']\n  address = \"/tmp/x/c.sock.ttrpc\"", `sandbox = "registry.k8s.io/pause:3.10.1"`},
			}[v.ConfigVersion()]
			if len(want) == 0 {
				t.Fatalf("%v: config version %d has no expectations", v, v.ConfigVersion())
			}
			for _, w := range want {
				if !strings.Contains(cfg, w) {
					t.Errorf("%v config lacks %q:\n%s", v, w, cfg)
				}
			}
			if v.ConfigVersion() == 4 && strings.Contains(cfg, "[grpc]") {
				t.Errorf("%v config has a top-level [grpc], which version 4 ignores:\n%s", v, cfg)
			}
		})
	}
}
