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
const runMain = "INSTALLER_RUN_MAIN=1"

func TestMain(m *testing.M) { samplenodes.Main(m, runMain, main) }

// TestAgreesWithSandboxpin runs the installer on every sample node, with
// each list of images and the node's versions, and requires the pre-pull
// list of `sandboxpin prepull`, the whole verdict of `sandboxpin audit
// --images` (status, findings, fixes) and its exit code (0 protected, 1
// not); where sandboxpin cannot tell the sandbox image (exit 3), the
// installer must refuse to run.
func TestAgreesWithSandboxpin(t *testing.T) {
	t.Parallel()
	cli := samplenodes.Sandboxpin(t)
	for _, n := range samplenodes.All(t) {
		t.Run(n.String(), func(t *testing.T) {
			t.Parallel()
			args := append([]string{"-root", n.Root}, n.VersionArgs()...)
			cliArgs := append([]string{"--root", n.Root}, n.VersionArgs()...)
			res, err := n.Resolve(t)
			if err != nil {
				code, _, stderr := samplenodes.Run(t, []string{runMain}, samplenodes.ShippedImages, os.Args[0], args...)
				assert.Equal(t, 2, code, "installer: stderr %s", stderr)
				assert.Contains(t, stderr, "the sandbox image cannot be told")
				cliCode, _, cliErr := samplenodes.Run(t, nil, "", cli, append([]string{"audit", "--images", samplenodes.ShippedImages}, cliArgs...)...)
				assert.Equal(t, 3, cliCode, "sandboxpin audit: stderr %s", cliErr)
				return
			}
			code, out, errOut := samplenodes.Run(t, nil, "", cli, append([]string{"prepull", "-o", "json"}, cliArgs...)...)
			require.Equal(t, 0, code, "sandboxpin prepull: stderr %s", errOut)
			var prepull struct{ Prepull []string }
			require.NoError(t, json.Unmarshal([]byte(out), &prepull), out)

			files := samplenodes.Images(t, res.SandboxImage, res.Prepull)
			for _, what := range samplenodes.Keys(files) {
				code, stdout, stderr := samplenodes.Run(t, []string{runMain}, files[what], os.Args[0], args...)
				require.Contains(t, []int{0, 1}, code, "%s: installer: stderr %s", what, stderr)
				var got struct {
					Prepull []string
					Verdict audit.Verdict
				}
				require.NoError(t, json.Unmarshal([]byte(stdout), &got), "%s: %s", what, stdout)

				cliCode, cliOut, cliErr := samplenodes.Run(t, nil, "", cli, append([]string{"audit", "--images", files[what], "-o", "json"}, cliArgs...)...)
				assert.Equal(t, cliCode, code, "%s: exit code; sandboxpin audit: stderr %s", what, cliErr)
				var want audit.Verdict
				require.NoError(t, json.Unmarshal([]byte(cliOut), &want), "%s: %s", what, cliOut)
				assert.Equal(t, want, got.Verdict, "%s: verdict", what)
				assert.Equal(t, prepull.Prepull, got.Prepull, "%s: pre-pull", what)
			}
		})
	}
}
