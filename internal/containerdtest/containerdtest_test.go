package containerdtest

import (
	"testing"
)

func TestStart(t *testing.T) {
	t.Parallel()
	for _, v := range []Version{V1, V2} {
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
