package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/internal/containerdtest"
	"github.com/sandboxpin/sandboxpin/internal/criotest"
)

// TestCRIOLive runs resolve and audit against a real CRI-O 1.36.3 whose
// pause_image and pinned_images come from drop-ins over crio.conf, with
// --root at the instance's directory (laid out as a node: etc/crio/...).
// The pause image is stored as registry.k8s.io/pause:3.10.1.
func TestCRIOLive(t *testing.T) {
	t.Parallel()
	const stored = "registry.k8s.io/pause:3.10.1"
	tests := []struct {
		name       string
		configured string // pause_image in the drop-in
		wantCode   int    // audit's exit code
		unpinned   bool   // CRI-O reports the stored pause image pinned=false
		wantAudit  string
		wantNote   string // a note of resolve, "" for none about the pause image
	}{
		{
			name: "exact name", configured: stored,
			wantCode: exitOK, wantAudit: "OK: cri-o pins its sandbox image " + stored,
		},
		{
			// CRI-O pins the stored image (its pattern compare ignores
			// case) but looks the sandbox image up by the configured name
			// exactly: CreatePodSandbox takes a store reference of
			// pauseImage.Raw() (internal/storage/runtime.go at v1.36.3), and
			// ImageStatus of the uppercase name finds nothing (seen here).
			// So a new pod pulls it: audit fails on the lookup, not the pin.
			name: "uppercase host", configured: "REGISTRY.K8S.IO/pause:3.10.1",
			wantCode: exitCheck,
			wantAudit: "FAIL: the image stored as " + stored + " is pinned, but cri-o looks its sandbox image up by the configured name REGISTRY.K8S.IO/pause:3.10.1, " +
				"and nothing is stored under it: " + stored + " is the same image under a spelling that differs only in letter case",
		},
		{
			name: "alias", configured: "k8s.gcr.io/pause:3.10.1",
			wantCode: exitCheck, unpinned: true, wantAudit: "FAIL: cri-o does not pin its sandbox image k8s.gcr.io/pause:3.10.1 (stored as " + stored + ")",
			wantNote: "pins the pause image only under the name k8s.gcr.io/pause:3.10.1",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := criotest.Start(t, criotest.Options{
				DropIns: map[string]string{
					"10-pause.conf": "[crio.image]\n# set by the installer\npause_image = \"" + tt.configured + "\"\n",
					"20-pins.conf":  "[crio.image]\npinned_images = [\n  \"*busybox*\",\n]\n",
				},
				Images: []containerdtest.Image{
					{Names: []string{stored}},
					{Names: []string{"docker.io/library/busybox:1.36"}},
					{Names: []string{"registry.k8s.io/coredns/coredns:v1.11.1"}},
				},
			})

			code, out, errOut := runCmd(t, "resolve", "--root", c.Dir, "--runtime-endpoint", c.Endpoint, "-o", "json")
			require.Equal(t, exitOK, code, errOut)
			var res resolveJSON
			require.NoError(t, json.Unmarshal([]byte(out), &res), out)
			assert.Equal(t, tt.configured, res.SandboxImage)
			assert.Equal(t, "cri-o", res.Runtime)
			assert.Equal(t, "cri-o-compat", res.PinMode)
			assert.Equal(t, []string{tt.configured, "*busybox*"}, res.Pins)
			assert.Empty(t, res.Conflicts, "the live CRI-O and its files agree")
			var origins []string
			for _, cand := range res.Candidates {
				origins = append(origins, cand.Source+" "+cand.Image+" "+cand.Origin)
			}
			assert.Contains(t, origins, "cri-o-config "+tt.configured+" /etc/crio/crio.conf.d/10-pause.conf:3")
			assert.Contains(t, origins, "runtime-info "+tt.configured+" runtime status (cri-o 1.36.3)")
			var messages []string
			for _, n := range res.Notes {
				messages = append(messages, n.Message)
			}
			notes := strings.Join(messages, "\n")
			if tt.wantNote != "" {
				assert.Contains(t, notes, tt.wantNote)
			} else {
				assert.NotContains(t, notes, "pins the pause image")
			}

			code, out, errOut = runCmd(t, "audit", "--root", c.Dir, "--runtime-endpoint", c.Endpoint)
			assert.Equal(t, tt.wantCode, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
			assert.Contains(t, out, tt.wantAudit)
			assert.Contains(t, out, stored+" (sandbox)")
			rows := map[string]string{}
			for _, line := range strings.Split(out, "\n") {
				if name, rest, ok := strings.Cut(line, " "); ok {
					rows[name] = strings.Join(strings.Fields(rest), " ")
				}
			}
			// CRI-O's own pinned and sandboxpin's CRIOCompat verdict agree.
			assert.Regexp(t, `^true pin "\*busybox\*"`, rows["docker.io/library/busybox:1.36"])
			assert.Regexp(t, `^false -`, rows["registry.k8s.io/coredns/coredns:v1.11.1"])
			if !tt.unpinned {
				assert.Regexp(t, `^\(sandbox\) true pin`, rows[stored])
			} else {
				assert.Regexp(t, `^\(sandbox\) false -`, rows[stored])
			}
			t.Logf("audit:\n%s", out)

			// serve's and audit -o prometheus's count: the sandbox image is
			// one of the images to pin even where the cri-o-compat rules
			// miss it, as they miss the alias.
			code, out, errOut = runCmd(t, "audit", "-o", "prometheus", "--root", c.Dir, "--runtime-endpoint", c.Endpoint)
			assert.Equal(t, tt.wantCode, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
			fams := parseExposition(t, strings.NewReader(out))
			// The sandbox image and busybox.
			assert.InDelta(t, 2.0, mustGauge(t, fams, metricMustPin), 0, out)
			// Only the exact name is found by CRI-O's own lookup.
			assert.InDelta(t, map[bool]float64{true: 1, false: 0}[tt.configured == stored], mustGauge(t, fams, metricStoredAs), 0, out)
			if !tt.unpinned {
				assert.Zero(t, mustGauge(t, fams, metricUnprotected), out)
			} else {
				assert.InDelta(t, 1.0, mustGauge(t, fams, metricUnprotected), 0, out)
			}
		})
	}
}
