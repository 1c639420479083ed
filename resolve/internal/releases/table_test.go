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
		"a test fails when this file and the rows differ. A range's start is included and its end left out. Versions are read one way\n" +
		"for every row: -alpha.N, -beta.N, -rc.N (also -rcN, ~rcN) are pre-releases; any other suffix is a distribution's build of the\n" +
		"release (-k3s1, -k3s1.36, +rke2r1, ~ds1-1+deb12u3, -0ubuntu1, +unknown). A bound's spelling says how its release's pre-releases\n" +
		"fall (the column \"pre-releases\"): \"1.7\" includes 1.7.0's, \"1.35.0-rc.0\" starts at that pre-release, \"1.24.9\" comes after its own.\n")
	table := func(title, valueHead string, rows []Row) {
		fmt.Fprintf(&b, "\n## %s\n\n| component | versions | pre-releases | %s | read at |\n|---|---|---|---|---|\n", title, valueHead)
		for _, r := range rows {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", r.Component, r.Range, r.Range.Pre(), cell(r.Value), cell(r.Read))
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
		b.WriteString("| component | versions | pre-releases | read at |\n|---|---|---|---|\n")
		for _, r := range f.Rows() {
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", r.Component, r.Range, r.Range.Pre(), cell(r.Read))
		}
		for _, x := range BuildFixes() {
			if x.Fact == f {
				fmt.Fprintf(&b, "| %s builds %s… (not these: they carry the fix) | %s | %s | %s |\n",
					x.Row.Component, x.Build, x.Row.Range, x.Row.Range.Pre(), cell(x.Row.Read))
			}
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
	file, err := os.ReadFile(factsDoc)
	require.NoError(t, err)
	want, hand, found := strings.Cut(string(file), handMark)
	require.True(t, found, "docs/release-facts.md has no line %q", strings.TrimSpace(handMark))
	if *update {
		want = got
		require.NoError(t, os.WriteFile(factsDoc, []byte(got+handMark+hand), 0o644)) //nolint:gosec // G306: a document of the repository
	}
	assert.Equal(t, want, got, "docs/release-facts.md is stale: run this test with -update")
}

// handMark starts the part of docs/release-facts.md written by hand (the
// upstream history behind the package docs), which -update keeps and the
// test does not compare.
const handMark = "\n<!-- Written by hand from here on: -update keeps it. -->\n"
