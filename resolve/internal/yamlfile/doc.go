// Package yamlfile bounds what a YAML file may cost before its values are
// decoded: it parses each document into go.yaml.in/yaml/v3's node tree,
// which expands no alias, and checks the tree against [MaxDepth],
// [MaxNodes] (aliases expanded, measured once per anchor), [MaxAliasBytes],
// [MaxAnchors] and [MaxDocuments], counted over one [File]. The trees also
// give each key's line.
//
//	var f yamlfile.File
//	docs, _, err := f.Parse(text, firstLine)
//	n := yamlfile.Key(docs[0].Content[0], "imageRepository")
//	line := yamlfile.Line(text, firstLine, n.Line)
//
// The verdict on a file is not this package's: package resolve decodes
// kubeadm's config with sigs.k8s.io/yaml, as kubeadm does. A document the
// node tree's parser refuses is refused here with its line; the
// differential fuzz target FuzzKubeadmVerdict (resolve/internal/config)
// compares the two.
package yamlfile
