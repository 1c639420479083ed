package resolve

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/criinfo"
)

// labelFixTests are runtimes and versions against whether LabelFix offers
// containerd's pinned label (the release facts ContainerdPinnedLabel and
// ContainerdPinnedLabelAtStart).
var labelFixTests = []struct {
	name     string
	runtime  criinfo.Runtime
	version  string // the runtime's version Resolve used; "" unknown
	config   string // path of the containerd config read
	want     bool
	restart  bool   // the message asks for a restart (before 1.6.25 and 1.7.10)
	wantPart string // a part of the message, "" for none
	wantCmd  string // the command the message names
}{
	{name: "1.6.21", runtime: criinfo.RuntimeContainerd, version: "1.6.21"},
	{name: "1.6.22", runtime: criinfo.RuntimeContainerd, version: "1.6.22", want: true, restart: true},
	{name: "1.6.25", runtime: criinfo.RuntimeContainerd, version: "1.6.25", want: true},
	{name: "1.7.2", runtime: criinfo.RuntimeContainerd, version: "1.7.2"},
	{name: "1.7.9", runtime: criinfo.RuntimeContainerd, version: "1.7.9", want: true, restart: true},
	{name: "1.7.35", runtime: criinfo.RuntimeContainerd, version: "1.7.35", want: true},
	{name: "2.4.2", runtime: criinfo.RuntimeContainerd, version: "2.4.2", want: true},
	{name: "unknown version", runtime: criinfo.RuntimeContainerd},
	{name: "cri-o", runtime: criinfo.RuntimeCRIO, version: "1.36.3"},
	{name: "k3s", runtime: criinfo.RuntimeContainerd, version: "v1.7.23-k3s2", config: "/var/lib/rancher/k3s/agent/etc/containerd/config.toml", want: true,
		wantPart: "k3s clears that label at every start", wantCmd: "k3s ctr -n k8s.io images label k8s.gcr.io/pause:3.10.1 io.cri-containerd.pinned=pinned io.cattle.k3s.pinned="},
	{name: "rke2", runtime: criinfo.RuntimeContainerd, version: "2.1.5-k3s1", config: "/var/lib/rancher/rke2/agent/etc/containerd/config.toml", want: true,
		wantPart: "rke2 clears that label", wantCmd: "/var/lib/rancher/rke2/bin/ctr --address /run/k3s/containerd/containerd.sock -n k8s.io images label"},
}

func TestLabelFix(t *testing.T) {
	t.Parallel()
	const name = "k8s.gcr.io/pause:3.10.1"
	for _, tt := range labelFixTests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := &Result{Runtime: tt.runtime}
			if tt.version != "" {
				res.Versions = []ComponentVersion{{Component: Component(tt.runtime), Version: tt.version, Used: true}}
			}
			if tt.config != "" {
				res.Candidates = []Candidate{{Source: SourceContainerdConfig, Location: Location{Path: tt.config, Line: 12}}}
			}
			f, ok := res.LabelFix(name, KindSandboxUnpinned)
			require.Equal(t, tt.want, ok, "LabelFix(%q) on %s %s", name, tt.runtime, tt.version)
			if !ok {
				assert.Zero(t, f)
				return
			}
			assert.Equal(t, ActionLabel, f.Action)
			assert.Equal(t, name, f.To)
			assert.Equal(t, KindSandboxUnpinned, f.Answers)
			assert.Equal(t, UrgencyUnprotected, f.Urgency)
			assert.Contains(t, f.Message, "`ctr -n k8s.io images label "+name+" io.cri-containerd.pinned=pinned`")
			assert.Equal(t, tt.restart, strings.Contains(f.Message, "then restart containerd"), "restart in %q", f.Message)
			if tt.wantPart != "" {
				assert.Contains(t, f.Message, tt.wantPart)
				assert.Contains(t, f.Message, tt.wantCmd)
			}
		})
	}
	var nilResult *Result
	_, ok := nilResult.LabelFix(name, KindSandboxUnpinned)
	assert.False(t, ok, "a nil Result")
}

func TestActionLabelText(t *testing.T) {
	t.Parallel()
	var a Action
	require.NoError(t, a.UnmarshalText([]byte("label")))
	assert.Equal(t, ActionLabel, a)
}
