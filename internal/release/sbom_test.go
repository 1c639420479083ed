package release_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/internal/release"
)

func TestSPDX(t *testing.T) {
	t.Parallel()
	// A test binary's build info lists no modules: build releasetool.
	exe := filepath.Join(t.TempDir(), "releasetool")
	out, err := exec.Command("go", "build", "-o", exe, "./releasetool").CombinedOutput()
	require.NoError(t, err, "%s", out)
	data, err := os.ReadFile(exe)
	require.NoError(t, err)
	when := time.Date(2026, 12, 4, 7, 0, 0, 0, time.UTC)
	doc, err := release.SPDX("releasetool", data, when)
	require.NoError(t, err)
	again, err := release.SPDX("releasetool", data, when)
	require.NoError(t, err)
	assert.Equal(t, doc, again)

	var got struct {
		SPDXVersion  string `json:"spdxVersion"`
		CreationInfo struct{ Created string }
		Packages     []struct {
			SPDXID, Name, VersionInfo string
			ExternalRefs              []struct{ ReferenceLocator string }
		}
		Relationships []struct{ SpdxElementID, RelationshipType, RelatedSpdxElement string }
	}
	require.NoError(t, json.Unmarshal(doc, &got))
	assert.Equal(t, "SPDX-2.3", got.SPDXVersion)
	assert.Equal(t, "2026-12-04T07:00:00Z", got.CreationInfo.Created)
	purls := map[string]bool{}
	for _, p := range got.Packages {
		for _, r := range p.ExternalRefs {
			purls[r.ReferenceLocator] = true
		}
	}
	assert.True(t, purls["pkg:golang/stdlib@"+runtime.Version()], "the standard library in %v", purls)
	assert.Contains(t, string(doc), `"pkg:golang/golang.org/x/mod@v`)
	assert.Len(t, got.Relationships, len(got.Packages), "DESCRIBES the binary, which depends on every other package")

	_, err = release.SPDX("not-go", []byte("#!/bin/sh\n"), when)
	assert.Error(t, err)
}
