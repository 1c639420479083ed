package release

import (
	"bytes"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"strings"
	"time"
)

// The SPDX 2.3 JSON document SPDX writes (spdx-spec v2.3, clauses 6, 7
// and 11), with the fields it fills in.
type (
	spdxDocument struct {
		SPDXVersion       string             `json:"spdxVersion"`
		DataLicense       string             `json:"dataLicense"`
		SPDXID            string             `json:"SPDXID"`
		Name              string             `json:"name"`
		DocumentNamespace string             `json:"documentNamespace"`
		CreationInfo      spdxCreationInfo   `json:"creationInfo"`
		Packages          []spdxPackage      `json:"packages"`
		Relationships     []spdxRelationship `json:"relationships"`
	}
	spdxCreationInfo struct {
		Created  string   `json:"created"`
		Creators []string `json:"creators"`
	}
	spdxPackage struct {
		SPDXID           string            `json:"SPDXID"`
		Name             string            `json:"name"`
		VersionInfo      string            `json:"versionInfo,omitempty"`
		DownloadLocation string            `json:"downloadLocation"`
		FilesAnalyzed    bool              `json:"filesAnalyzed"`
		Checksums        []spdxChecksum    `json:"checksums,omitempty"`
		ExternalRefs     []spdxExternalRef `json:"externalRefs,omitempty"`
		PrimaryPurpose   string            `json:"primaryPackagePurpose,omitempty"`
		Comment          string            `json:"comment,omitempty"`
	}
	spdxChecksum struct {
		Algorithm string `json:"algorithm"`
		Value     string `json:"checksumValue"`
	}
	spdxExternalRef struct {
		Category string `json:"referenceCategory"`
		Type     string `json:"referenceType"`
		Locator  string `json:"referenceLocator"`
	}
	spdxRelationship struct {
		Element string `json:"spdxElementId"`
		Type    string `json:"relationshipType"`
		Related string `json:"relatedSpdxElement"`
	}
)

// SPDX returns an SPDX 2.3 JSON SBOM of the Go binary data, named name (its
// file name), from its build info (what `go version -m` prints): the binary
// with its SHA-256 and build settings, the Go standard library at the
// toolchain's version, the main module and every module linked in, each
// with its package URL and go.sum hash; created is the document's creation
// time (a release gives its commit's, so that the SBOM is reproducible).
func SPDX(name string, data []byte, created time.Time) ([]byte, error) {
	info, err := buildinfo.Read(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("release: %s: %w", name, err)
	}
	sum := sha256.Sum256(data)
	settings := make([]string, 0, len(info.Settings))
	for _, s := range info.Settings {
		settings = append(settings, s.Key+"="+s.Value)
	}
	bin := spdxPackage{
		SPDXID: "SPDXRef-Binary", Name: name, VersionInfo: info.Main.Version,
		DownloadLocation: "NOASSERTION", PrimaryPurpose: "APPLICATION",
		Checksums: []spdxChecksum{{"SHA256", hex.EncodeToString(sum[:])}},
		Comment:   "package " + info.Path + "; build settings: " + strings.Join(settings, " "),
	}
	doc := spdxDocument{
		SPDXVersion: "SPDX-2.3", DataLicense: "CC0-1.0", SPDXID: "SPDXRef-DOCUMENT", Name: name,
		DocumentNamespace: "https://github.com/sandboxpin/sandboxpin/spdx/" + name + "-" + hex.EncodeToString(sum[:]),
		CreationInfo:      spdxCreationInfo{Created: created.UTC().Format(time.RFC3339), Creators: []string{"Tool: sandboxpin-internal-release"}},
		Packages: []spdxPackage{bin, {
			SPDXID: "SPDXRef-Go-stdlib", Name: "stdlib", VersionInfo: info.GoVersion, DownloadLocation: "https://go.dev/dl/",
			ExternalRefs: []spdxExternalRef{purl("stdlib", info.GoVersion)},
		}},
		Relationships: []spdxRelationship{{"SPDXRef-DOCUMENT", "DESCRIBES", "SPDXRef-Binary"}, {"SPDXRef-Binary", "DEPENDS_ON", "SPDXRef-Go-stdlib"}},
	}
	mods := append([]*debug.Module{&info.Main}, info.Deps...)
	for i, m := range mods {
		if m.Replace != nil {
			m = m.Replace
		}
		p := spdxPackage{
			SPDXID: fmt.Sprintf("SPDXRef-Module-%d", i), Name: m.Path, VersionInfo: m.Version,
			DownloadLocation: "NOASSERTION", ExternalRefs: []spdxExternalRef{purl(m.Path, m.Version)},
		}
		if m.Sum != "" {
			p.Comment = "go.sum " + m.Sum
		}
		doc.Packages = append(doc.Packages, p)
		rel := "DEPENDS_ON"
		if i == 0 {
			rel = "GENERATED_FROM"
		}
		doc.Relationships = append(doc.Relationships, spdxRelationship{"SPDXRef-Binary", rel, p.SPDXID})
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	return append(out, '\n'), err
}

// purl is the package URL of a Go module version (purl-spec, type golang).
func purl(path, version string) spdxExternalRef {
	return spdxExternalRef{"PACKAGE-MANAGER", "purl", "pkg:golang/" + path + "@" + version}
}
