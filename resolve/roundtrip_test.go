package resolve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/audit"
	"github.com/sandboxpin/sandboxpin/reference"
	"github.com/sandboxpin/sandboxpin/resolve"
)

// mirrorPrefix is the mirror the round trip adds as an alias of the
// sandbox image's registry.
const mirrorPrefix = "mirror.example.com/m"

// TestResultJSONRoundTrip resolves every sample node, with the default
// aliases and with a mirror's, writes the Result as `sandboxpin resolve -o
// json` does and reads it back, and requires the same JSON again and the
// same verdict from audit.Judge on the runtime's images: the sandbox image
// stored as configured, only under the mirror's spelling, unpinned, or not
// at all.
func TestResultJSONRoundTrip(t *testing.T) {
	t.Parallel()
	for _, node := range resolve.SampleNodes() {
		for _, mirrored := range []bool{false, true} {
			o := node.Opts
			name := fmt.Sprintf("%s/runtime=%s,kubelet=%s,kubeadm=%s/mirror=%v", node.Node, o.RuntimeVersion, o.KubeletVersion, o.KubeadmVersion, mirrored)
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				opts := node.Opts
				opts.Root = resolve.DirFS(filepath.Join("testdata", "nodes", node.Node))
				res, err := resolve.Resolve(context.Background(), opts)
				require.NoError(t, err)
				var mirror string
				if mirrored {
					var aliases *reference.Aliases
					aliases, mirror = mirrorOf(res.SandboxImage)
					if aliases == nil {
						t.Skipf("no mirror alias for %q", res.SandboxImage)
					}
					opts.Aliases = aliases
					res, err = resolve.Resolve(context.Background(), opts)
					require.NoError(t, err)
					require.NotNil(t, res.AliasRules, "a Result of other aliases than the defaults says so")
				}
				b, err := json.Marshal(res)
				require.NoError(t, err)
				var back resolve.Result
				require.NoError(t, json.Unmarshal(b, &back))
				again, err := json.Marshal(&back)
				require.NoError(t, err)
				assert.JSONEq(t, string(b), string(again), "the JSON of the Result read back")
				assert.Equal(t, res.Aliases().Rules(), back.Aliases().Rules(), "Aliases")

				img := res.SandboxImage
				observations := map[string]audit.ListedObservation{
					"as configured": {Images: []*audit.ListedImage{{ID: "sha256:1", RepoTags: []string{img}, Pinned: true}}, Lookup: audit.LookupFound},
					"unpinned":      {Images: []*audit.ListedImage{{ID: "sha256:1", RepoTags: []string{img}}}},
					"absent":        {Images: []*audit.ListedImage{{ID: "sha256:2", RepoTags: []string{"docker.io/library/busybox:1"}}}},
				}
				if mirror != "" {
					observations["only the mirror's spelling"] = audit.ListedObservation{
						Images: []*audit.ListedImage{{ID: "sha256:1", RepoTags: []string{mirror}, Pinned: true}}, Lookup: audit.LookupNotFound}
				}
				for what, obs := range observations {
					want, wantErr := audit.Judge(res, obs)
					got, gotErr := audit.Judge(&back, obs)
					if img == "" {
						assert.ErrorIs(t, wantErr, resolve.ErrNoSandboxImage, what)
						assert.ErrorIs(t, gotErr, resolve.ErrNoSandboxImage, what)
						continue
					}
					require.NoError(t, wantErr, what)
					require.NoError(t, gotErr, what)
					assert.Equal(t, want, got, "Judge's verdict on %s after the round trip", what)
					if what == "only the mirror's spelling" {
						assert.Equal(t, audit.SpellingAlias, got.Sandbox.Spelling, "the mirror's alias applies after the round trip")
					}
				}
			})
		}
	}
}

// mirrorOf returns the default aliases with a mirror of img's repository
// prefix added, and img's spelling on the mirror; nil when img is no
// reference or the rule does not fit the defaults.
func mirrorOf(img string) (*reference.Aliases, string) {
	r, err := reference.Parse(img)
	if err != nil {
		return nil, ""
	}
	aliases, err := reference.DefaultAliases().With(reference.Alias{From: mirrorPrefix, To: r.Domain()})
	if err != nil {
		return nil, ""
	}
	name := mirrorPrefix + "/" + r.Path()
	if r.Tag() != "" {
		name += ":" + r.Tag()
	}
	if r.Digest() != "" {
		name += "@" + r.Digest().String()
	}
	return aliases, name
}
