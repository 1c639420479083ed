package releases

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// update rewrites docs/release-facts.md from the rows:
// go test ./resolve/internal/releases -run TestReleaseFactsDoc -update
var update = flag.Bool("update", false, "rewrite docs/release-facts.md")

const factsDoc = "../../../docs/release-facts.md"

// factNames are the names of the facts, for the document.
var factNames = [numFacts]string{
	ContainerdNeverPins:             "ContainerdNeverPins",
	ContainerdPinsCRIPulls:          "ContainerdPinsCRIPulls",
	ContainerdConfig4:               "ContainerdConfig4",
	ContainerdTaglessNeverPinned:    "ContainerdTaglessNeverPinned",
	ContainerdNoSandboxReport:       "ContainerdNoSandboxReport",
	ContainerdAliasNeverPinned:      "ContainerdAliasNeverPinned",
	ContainerdTagDigestNeverPinned:  "ContainerdTagDigestNeverPinned",
	ContainerdTagDigestDropsTag:     "ContainerdTagDigestDropsTag",
	ContainerdShortNeverPinned:      "ContainerdShortNeverPinned",
	ContainerdSandboxNotFound:       "ContainerdSandboxNotFound",
	ContainerdPausePullOff:          "ContainerdPausePullOff",
	CRIDockerdNeverPins:             "CRIDockerdNeverPins",
	CRIDockerdAliasNeverPinned:      "CRIDockerdAliasNeverPinned",
	CRIDockerdDigestOnlyNeverPinned: "CRIDockerdDigestOnlyNeverPinned",
	CRIDockerdDigestNeverPinned:     "CRIDockerdDigestNeverPinned",
	CRIDockerdOtherSpelling:         "CRIDockerdOtherSpelling",
	CRIONoSandboxReport:             "CRIONoSandboxReport",
	CRIONeverPins:                   "CRIONeverPins",
	CRIOFirstNameOnly:               "CRIOFirstNameOnly",
	CRIOShortNameEnforcing:          "CRIOShortNameEnforcing",
	CRIOShortNeverPinned:            "CRIOShortNeverPinned",
	CRIOAliasNeverPinned:            "CRIOAliasNeverPinned",
	KubeletIgnoresPinned:            "KubeletIgnoresPinned",
	KubeletProtectsDefault:          "KubeletProtectsDefault",
	KubeletProtectsRuntimeImage:     "KubeletProtectsRuntimeImage",
	KubeletProtectsOtherImage:       "KubeletProtectsOtherImage",
	KubeletIgnoresFlag:              "KubeletIgnoresFlag",
	KubeletRejectsFlag:              "KubeletRejectsFlag",
	KubeadmKeepsFlag:                "KubeadmKeepsFlag",
	KubeadmUpgradeRunsPause:         "KubeadmUpgradeRunsPause",
	CRIDockerdPinsFlags:             "CRIDockerdPinsFlags",
	ContainerdPinnedLabel:           "ContainerdPinnedLabel",
	ContainerdPinnedLabelAtStart:    "ContainerdPinnedLabelAtStart",
}

// renderDoc writes every row as Markdown tables.
func renderDoc() string {
	var b strings.Builder
	b.WriteString("# Release facts\n\nGenerated from the rows of `resolve/internal/releases` by `go test ./resolve/internal/releases -run TestReleaseFactsDoc -update`;\n" +
		"a test fails when this file and the rows differ. A range's start is included and its end left out; \"1.7\" includes 1.7's\n" +
		"pre-releases, \"1.24.9\" comes after its own.\n")
	table := func(title, valueHead string, rows []Row) {
		fmt.Fprintf(&b, "\n## %s\n\n| component | versions | %s | read at |\n|---|---|---|---|\n", title, valueHead)
		for _, r := range rows {
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", r.Component, r.Range, cell(r.Value), cell(r.Read))
		}
	}
	table("Built-in sandbox images", "image", defaults)
	table("kubeadm's pause tag", "PauseVersion", kubeadmPause)
	table("kubeadm's default imageRepository", "repository", kubeadmRepository)
	table("kubeadm pre-releases read", "image", kubeadmPreReleases)
	table("End of support", "last day (a month: through its end)", supportEnds)
	table("Kubernetes minors supported", "support", kubernetesSupport)
	b.WriteString("\n## Behaviour per release\n\nThe note is what users read; `%s` are filled in by resolve.\n")
	for f := range numFacts {
		fmt.Fprintf(&b, "\n### %s\n\n", factNames[f])
		if n := f.Note(); n != "" {
			fmt.Fprintf(&b, "%s\n\n", cell(n))
		}
		b.WriteString("| component | versions | read at |\n|---|---|---|\n")
		for _, r := range f.Rows() {
			fmt.Fprintf(&b, "| %s | %s | %s |\n", r.Component, r.Range, cell(r.Read))
		}
	}
	return b.String()
}

// cell escapes s for a Markdown table cell.
func cell(s string) string {
	if s == "" {
		return "—"
	}
	return strings.ReplaceAll(s, "|", `\|`)
}

func TestReleaseFactsDoc(t *testing.T) {
	t.Parallel()
	for f := range numFacts {
		assert.NotEmpty(t, factNames[f], "fact %d has no name in factNames: its heading in docs/release-facts.md would be empty", f)
	}
	got := renderDoc()
	if *update {
		require.NoError(t, os.WriteFile(factsDoc, []byte(got), 0o644)) //nolint:gosec // G306: a document of the repository
	}
	want, err := os.ReadFile(factsDoc)
	require.NoError(t, err)
	assert.Equal(t, string(want), got, "docs/release-facts.md is stale: run this test with -update")
}
