package releases

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// holdsTests are releases whose source was read at their tag, with whether
// the fact holds there.
var holdsTests = []struct {
	name    string
	fact    Fact   // fact looked up
	version string // release, as tagged upstream without the "v"
	want    bool   // whether the fact holds at version
}{
	// internal/cri/server/images/image_pull.go getLabels compares strings at
	// each of these tags; no release holds a fix for containerd#13314.
	{name: "tagless 2.0.0", fact: ContainerdTaglessNeverPinned, version: "2.0.0", want: true},
	{name: "tagless 2.2.10", fact: ContainerdTaglessNeverPinned, version: "2.2.10", want: true},
	{name: "tagless 2.3.7", fact: ContainerdTaglessNeverPinned, version: "2.3.7", want: true},
	{name: "tagless 2.4.2", fact: ContainerdTaglessNeverPinned, version: "2.4.2", want: true},
	{name: "tagless 1.7.35", fact: ContainerdTaglessNeverPinned, version: "1.7.35"}, // ParseDockerRef on both sides
	{name: "never pins 1.6.21", fact: ContainerdNeverPins, version: "1.6.21", want: true},
	{name: "never pins 1.6.22", fact: ContainerdNeverPins, version: "1.6.22"},
	{name: "never pins 1.7.2", fact: ContainerdNeverPins, version: "1.7.2", want: true},
	{name: "never pins 1.7.3", fact: ContainerdNeverPins, version: "1.7.3"},
	{name: "CRI pulls 1.6.28", fact: ContainerdPinsCRIPulls, version: "1.6.28", want: true},
	{name: "CRI pulls 1.6.29", fact: ContainerdPinsCRIPulls, version: "1.6.29"}, // 2d43994fb
	{name: "CRI pulls 1.7.13", fact: ContainerdPinsCRIPulls, version: "1.7.13", want: true},
	{name: "CRI pulls 1.7.14", fact: ContainerdPinsCRIPulls, version: "1.7.14"}, // 26c057423
	{name: "not found 2.3.0-beta.0", fact: ContainerdSandboxNotFound, version: "2.3.0-beta.0", want: true},
	{name: "not found 2.3.3", fact: ContainerdSandboxNotFound, version: "2.3.3", want: true},
	{name: "not found 2.3.4", fact: ContainerdSandboxNotFound, version: "2.3.4"},               // containerd#13759
	{name: "not found 2.4.0-beta.0", fact: ContainerdSandboxNotFound, version: "2.4.0-beta.0"}, // containerd#13513
	{name: "pause pull off 2.3.7", fact: ContainerdPausePullOff, version: "2.3.7"},
	{name: "pause pull off 2.4.0-beta.0", fact: ContainerdPausePullOff, version: "2.4.0-beta.0", want: true},
	{name: "pause pull off 2.4.2", fact: ContainerdPausePullOff, version: "2.4.2", want: true},
	{name: "config 4 2.3.0-beta.2", fact: ContainerdConfig4, version: "2.3.0-beta.2"},
	{name: "config 4 2.3.0-rc.0", fact: ContainerdConfig4, version: "2.3.0-rc.0", want: true},
	// cmd/kubeadm/app/cmd/phases/upgrade/postupgrade.go unwantedFlags
	// (kubernetes#135807).
	{name: "keeps flag 1.34.0", fact: KubeadmKeepsFlag, version: "1.34.0"},
	{name: "keeps flag 1.35.4", fact: KubeadmKeepsFlag, version: "1.35.4"},
	{name: "keeps flag 1.36.0-rc.0", fact: KubeadmKeepsFlag, version: "1.36.0-rc.0", want: true},
	{name: "keeps flag 1.36.0", fact: KubeadmKeepsFlag, version: "1.36.0", want: true},
	{name: "keeps flag 1.37.2", fact: KubeadmKeepsFlag, version: "1.37.2", want: true},
	// cmd/kubeadm/app/phases/upgrade/health.go createJob.
	{name: "runs pause 1.17.0", fact: KubeadmUpgradeRunsPause, version: "1.17.0"},
	{name: "runs pause 1.18.0", fact: KubeadmUpgradeRunsPause, version: "1.18.0", want: true},
	{name: "runs pause 1.29.15", fact: KubeadmUpgradeRunsPause, version: "1.29.15", want: true},
	{name: "runs pause 1.30.0", fact: KubeadmUpgradeRunsPause, version: "1.30.0", want: true},
	{name: "runs pause 1.35.4", fact: KubeadmUpgradeRunsPause, version: "1.35.4", want: true},
	{name: "runs pause 1.36.0-rc.0", fact: KubeadmUpgradeRunsPause, version: "1.36.0-rc.0", want: true},
	{name: "runs pause 1.37.2", fact: KubeadmUpgradeRunsPause, version: "1.37.2", want: true},
	// core/pinned.go arrived with cri-dockerd#571, first in v0.4.7.
	{name: "pins flags 0.4.4", fact: CRIDockerdPinsFlags, version: "0.4.4"},
	{name: "pins flags 0.4.7", fact: CRIDockerdPinsFlags, version: "0.4.7", want: true},
	{name: "pins flags 0.4.10", fact: CRIDockerdPinsFlags, version: "0.4.10", want: true},
	// pkg/cri/store/image/image.go Store.update: per-reference pins from
	// v1.6.25 and v1.7.10; before, only a reference stored anew.
	{name: "label 1.6.21", fact: ContainerdPinnedLabel, version: "1.6.21"},
	{name: "label 1.6.24", fact: ContainerdPinnedLabel, version: "1.6.24"},
	{name: "label 1.6.25", fact: ContainerdPinnedLabel, version: "1.6.25", want: true},
	{name: "label 1.7.9", fact: ContainerdPinnedLabel, version: "1.7.9"},
	{name: "label 1.7.10", fact: ContainerdPinnedLabel, version: "1.7.10", want: true},
	{name: "label 1.7.35", fact: ContainerdPinnedLabel, version: "1.7.35", want: true},
	{name: "label 2.4.2", fact: ContainerdPinnedLabel, version: "2.4.2", want: true},
	{name: "label at start 1.6.21", fact: ContainerdPinnedLabelAtStart, version: "1.6.21"},
	{name: "label at start 1.6.22", fact: ContainerdPinnedLabelAtStart, version: "1.6.22", want: true},
	{name: "label at start 1.6.25", fact: ContainerdPinnedLabelAtStart, version: "1.6.25"},
	{name: "label at start 1.7.2", fact: ContainerdPinnedLabelAtStart, version: "1.7.2"},
	{name: "label at start 1.7.3", fact: ContainerdPinnedLabelAtStart, version: "1.7.3", want: true},
	{name: "label at start 1.7.9", fact: ContainerdPinnedLabelAtStart, version: "1.7.9", want: true},
	{name: "label at start 1.7.10", fact: ContainerdPinnedLabelAtStart, version: "1.7.10"},
}

func TestFactHolds(t *testing.T) {
	t.Parallel()
	for _, tt := range holdsTests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v, err := ParseVersion(tt.version)
			require.NoError(t, err)
			_, got := tt.fact.Holds(v)
			assert.Equal(t, tt.want, got, "%s.Holds(%s) = %t, want %t", factNames[tt.fact], tt.version, got, tt.want)
		})
	}
}

// TestFactReads checks that rows which once cited a branch, or a fix no
// release holds, name the tags their source was read at instead.
func TestFactReads(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		fact    Fact     // fact whose rows are checked
		want    []string // what the first row's Read names
		wantNot []string // claims the source at the tags disproves
	}{
		{
			name: "tagless", fact: ContainerdTaglessNeverPinned,
			want: []string{"internal/cri/server/images/image_pull.go getLabels", "@v2.2.10", "@v2.3.7", "@v2.4.2",
				"main 301026e58", "containerd#13336 and #13417 are open", "#13501 (ec5c899a4) was closed unmerged"},
			wantNot: []string{"the fix", "is on main"},
		},
		{
			name: "no sandbox report", fact: ContainerdNoSandboxReport,
			want:    []string{"plugins/cri/images/plugin.go", "@v2.3.7", "@v2.4.2 (containerd#13940"},
			wantNot: []string{"@main"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			read := tt.fact.Rows()[0].Read
			for _, s := range tt.want {
				assert.Contains(t, read, s, "%s Read = %q, want it to name %q", factNames[tt.fact], read, s)
			}
			for _, s := range tt.wantNot {
				assert.NotContains(t, read, s, "%s Read = %q, want no %q", factNames[tt.fact], read, s)
			}
		})
	}
}

// TestReadsNameTags checks that no row cites a branch as where it was read:
// a commit on main is in no release users run.
func TestReadsNameTags(t *testing.T) {
	t.Parallel()
	for name, rows := range allRows() {
		for i, r := range rows {
			for _, s := range []string{"@main", "is on main"} {
				assert.False(t, strings.Contains(r.Read, s), "%s row %d: Read = %q cites a branch (%q), not a tag", name, i, r.Read, s)
			}
		}
	}
}
