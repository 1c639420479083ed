package main

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/audit"
	"github.com/sandboxpin/sandboxpin/examples/internal/samplenodes"
)

// runMain makes this test binary run main instead of the tests, so that
// the tests run the program as its users do.
const runMain = "LISTIMAGES_RUN_MAIN=1"

func TestMain(m *testing.M) { samplenodes.Main(m, runMain, main) }

// TestAgreesWithAudit runs the filter on every sample node, with each list
// of images, and requires it to set pinned exactly where `sandboxpin audit
// --images` says the runtime pins the image or the node's rules must pin it
// (runtimePinned or mustPin); where sandboxpin cannot tell the sandbox
// image (exit 3), the filter must refuse to run.
func TestAgreesWithAudit(t *testing.T) {
	t.Parallel()
	cli := samplenodes.Sandboxpin(t)
	for _, n := range samplenodes.All(t) {
		t.Run(n.String(), func(t *testing.T) {
			t.Parallel()
			args := []string{"-root", n.Root}
			if v := n.Opts.RuntimeVersion; v != "" {
				args = append(args, "-runtime-version", v)
			}
			res, err := n.Resolve(t)
			if err != nil {
				code, _, stderr := samplenodes.Run(t, []string{runMain}, samplenodes.ShippedImages, os.Args[0], args...)
				assert.Equal(t, 2, code, "listimages: stderr %s", stderr)
				assert.Contains(t, stderr, "the sandbox image cannot be told")
				cliCode, _, cliErr := samplenodes.Run(t, nil, "", cli, append([]string{"audit", "--root", n.Root, "--images", samplenodes.ShippedImages}, n.VersionArgs()...)...)
				assert.Equal(t, 3, cliCode, "sandboxpin audit: stderr %s", cliErr)
				return
			}
			files := samplenodes.Images(t, res.SandboxImage, res.Prepull)
			for _, what := range samplenodes.Keys(files) {
				code, stdout, stderr := samplenodes.Run(t, []string{runMain}, files[what], os.Args[0], args...)
				require.Equal(t, 0, code, "%s: listimages: stderr %s", what, stderr)
				var got struct{ Images []*audit.ListedImage }
				require.NoError(t, json.Unmarshal([]byte(stdout), &got), "%s: %s", what, stdout)

				cliCode, cliOut, cliErr := samplenodes.Run(t, nil, "", cli, append([]string{"audit", "--root", n.Root, "--images", files[what], "-o", "json"}, n.VersionArgs()...)...)
				require.Contains(t, []int{0, 1}, cliCode, "%s: sandboxpin audit: stderr %s", what, cliErr)
				var v audit.Verdict
				require.NoError(t, json.Unmarshal([]byte(cliOut), &v), "%s: %s", what, cliOut)

				want, pinned := map[string]bool{}, map[string]bool{}
				for _, iv := range v.Images {
					want[iv.ID] = iv.RuntimePinned || iv.MustPin
				}
				for _, img := range got.Images {
					pinned[img.ID] = img.Pinned
				}
				assert.Equal(t, want, pinned, "%s: pinned by image ID", what)
			}
		})
	}
}
