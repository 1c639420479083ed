package yamlfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/sandboxpin/sandboxpin/resolve/internal/nodefs"
)

// The limits of one file, checked on the node trees before any value is
// decoded. go-yaml v2 (behind sigs.k8s.io/yaml, which kubeadm decodes
// with) stops at 10,000 levels of nesting and at a ratio of alias-driven
// decodes, but within 4 MiB it still spends a minute (and 16 GB of
// allocations) on many small documents that each stay under its alias
// ratio, and 1.8 GB on one long scalar aliased 100 times. kubeadm writes no
// anchors and about five levels of nesting; a complete config
// (InitConfiguration, ClusterConfiguration, KubeletConfiguration,
// KubeProxyConfiguration, as `kubeadm config print init-defaults` prints
// them) has about 250 keys in four documents.
const (
	// MaxDepth bounds the nesting of collections, aliases expanded: 20
	// times a kubeadm config's, and a hundredth of go-yaml's own limit.
	MaxDepth = 100
	// MaxNodes bounds the nodes of a file after alias expansion: each
	// scalar, sequence and mapping counts one, so "key: value" counts two.
	// A complete kubeadm config has about 600; go-yaml and the JSON round
	// trip of sigs.k8s.io/yaml decode 50,000 in about 0.05 s.
	MaxNodes = 50_000
	// MaxAliasBytes bounds the scalar bytes that aliases repeat, over the
	// file: go-yaml shares an aliased string, but the JSON it is turned
	// into copies it for every alias. A config that shares a list of
	// extraVolumes repeats a few hundred bytes.
	MaxAliasBytes = 1 << 20
	// MaxAnchors bounds anchors and aliases together, over the file;
	// kubeadm writes none, a hand-written config shares a few values.
	MaxAnchors = 1000
	// MaxDocuments bounds the non-empty documents of a file; each costs
	// the YAML library about 7 KB and 15 µs to set up, and kubeadm's own
	// files have at most five.
	MaxDocuments = 1000
)

// Error is a document refused by the YAML library or by a limit (Err wraps
// nodefs.ErrLimit), with the line of the file it names.
type Error struct {
	Line int   // 1-based line of the file; 0 if unknown
	Err  error // the library's error, or the limit passed
}

func (e *Error) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// File counts what the documents of one file use, over every call of
// [File.Parse]. The zero value is a file with nothing read yet.
type File struct {
	nodes, aliasBytes, anchors, docs int
}

// Stats is what the limits counted in one text: the nodes (aliases
// expanded) and the deepest nesting of a collection (a collection at the
// root is at depth 1).
type Stats struct{ Nodes, Depth int }

// shape is the size of a node, memoized for anchored nodes.
type shape struct{ nodes, depth, bytes int }

// Parse decodes the YAML text b (a part of the file that starts at the
// file's line firstLine) into one node tree per document, without
// expanding aliases, and checks the trees against the limits. Lines of
// the nodes are b's, as the library counts them; [Line] turns one into a
// line of the file.
func (f *File) Parse(b []byte, firstLine int) ([]*yaml.Node, Stats, error) {
	var docs []*yaml.Node
	var st Stats
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		doc := new(yaml.Node)
		err := dec.Decode(doc)
		if errors.Is(err, io.EOF) {
			return docs, st, nil
		}
		if err != nil {
			return nil, st, &Error{Line: Line(b, firstLine, ErrorLine(err)), Err: err}
		}
		if f.docs++; f.docs > MaxDocuments {
			return nil, st, f.limit(b, firstLine, doc.Line, "more than %d YAML documents", MaxDocuments)
		}
		w := walk{f: f, memo: map[*yaml.Node]shape{}}
		s, err := w.node(doc, 0)
		if err != nil {
			var e *Error
			if errors.As(err, &e) {
				e.Line = Line(b, firstLine, e.Line)
			}
			return nil, st, err
		}
		st.Nodes += s.nodes
		st.Depth = max(st.Depth, s.depth)
		docs = append(docs, doc)
	}
}

func (f *File) limit(b []byte, firstLine, line int, format string, args ...any) error {
	return &Error{Line: Line(b, firstLine, line), Err: fmt.Errorf("%w: "+format, append([]any{nodefs.ErrLimit}, args...)...)}
}

// walk measures one document's tree.
type walk struct {
	f    *File
	memo map[*yaml.Node]shape // anchored nodes measured
}

func (w *walk) over(n *yaml.Node, format string, args ...any) error {
	return &Error{Line: n.Line, Err: fmt.Errorf("%w: "+format, append([]any{nodefs.ErrLimit}, args...)...)}
}

// node measures n at depth d (the collections around it), counting into
// w.f. It recurses once per level of the tree, which the library bounds
// (10,000) and MaxDepth bounds before that.
func (w *walk) node(n *yaml.Node, d int) (shape, error) {
	f := w.f
	if n.Anchor != "" {
		if f.anchors++; f.anchors > MaxAnchors {
			return shape{}, w.over(n, "more than %d anchors and aliases", MaxAnchors)
		}
	}
	var s shape
	switch n.Kind {
	case yaml.AliasNode:
		if f.anchors++; f.anchors > MaxAnchors {
			return shape{}, w.over(n, "more than %d anchors and aliases", MaxAnchors)
		}
		t, ok := w.memo[n.Alias]
		if !ok { // an alias of a node not yet measured: none in valid YAML
			return shape{}, nil
		}
		if f.aliasBytes += t.bytes; f.aliasBytes > MaxAliasBytes {
			return shape{}, w.over(n, "aliases repeat more than %d bytes", MaxAliasBytes)
		}
		if d+t.depth > MaxDepth {
			return shape{}, w.over(n, "an alias nests deeper than %d levels", MaxDepth)
		}
		if f.nodes += t.nodes; f.nodes > MaxNodes {
			return shape{}, w.over(n, "more than %d nodes, aliases expanded", MaxNodes)
		}
		return t, nil
	case yaml.DocumentNode:
		for _, c := range n.Content {
			cs, err := w.node(c, d)
			if err != nil {
				return shape{}, err
			}
			s.nodes, s.bytes, s.depth = s.nodes+cs.nodes, s.bytes+cs.bytes, max(s.depth, cs.depth)
		}
		return s, nil
	case yaml.SequenceNode, yaml.MappingNode:
		if d+1 > MaxDepth {
			return shape{}, w.over(n, "more than %d levels of nesting", MaxDepth)
		}
		s.nodes, s.depth = 1, 1
		if f.nodes++; f.nodes > MaxNodes {
			return shape{}, w.over(n, "more than %d nodes, aliases expanded", MaxNodes)
		}
		for _, c := range n.Content {
			cs, err := w.node(c, d+1)
			if err != nil {
				return shape{}, err
			}
			s.nodes, s.bytes, s.depth = s.nodes+cs.nodes, s.bytes+cs.bytes, max(s.depth, 1+cs.depth)
		}
	default: // a scalar
		s = shape{nodes: 1, bytes: len(n.Value)}
		if f.nodes++; f.nodes > MaxNodes {
			return shape{}, w.over(n, "more than %d nodes, aliases expanded", MaxNodes)
		}
	}
	if n.Anchor != "" {
		w.memo[n] = s
	}
	return s, nil
}

// lineRE finds the line in a go-yaml error message ("yaml: line 3: ...").
var lineRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`line (\d+)`) })

// ErrorLine returns the line a go-yaml error names ("yaml: line 3: ..."),
// or 0.
func ErrorLine(err error) int {
	if m := lineRE().FindStringSubmatch(err.Error()); m != nil {
		if n, cerr := strconv.Atoi(m[1]); cerr == nil {
			return n
		}
	}
	return 0
}

// Line turns line, as go-yaml counts the lines of b (a carriage return
// alone, a NEL, LS or PS break a line too), into a line of the file whose
// line firstLine b starts on, as an editor counts them: by '\n'. An unknown
// line (0) is b's first; a line past b's end (go-yaml names the line after
// the last for an error at the end) is b's last. A text in UTF-16
// keeps go-yaml's count, within b's lines.
func Line(b []byte, firstLine, line int) int {
	last := firstLine + bytes.Count(bytes.TrimSuffix(b, []byte{'\n'}), []byte{'\n'})
	if line <= 0 {
		return firstLine
	}
	if bytes.IndexByte(b, '\r') < 0 && !bytes.Contains(b, []byte("\u0085")) &&
		!bytes.Contains(b, []byte("\u2028")) && !bytes.Contains(b, []byte("\u2029")) {
		return min(firstLine+line-1, last)
	}
	yl, fl := 1, firstLine // go-yaml's line and the file's, at b[i]
	for i := 0; i < len(b) && yl < line; i++ {
		switch {
		case b[i] == '\n':
			yl++
			fl++
		case b[i] == '\r':
			yl++
			if i+1 < len(b) && b[i+1] == '\n' {
				i++
				fl++
			}
		case bytes.HasPrefix(b[i:], []byte("\u0085")):
			yl++
			i++
		case bytes.HasPrefix(b[i:], []byte("\u2028")), bytes.HasPrefix(b[i:], []byte("\u2029")):
			yl++
			i += 2
		}
	}
	return min(fl, last)
}

// Key returns the value node of key in the mapping n, or nil.
func Key(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i]; k.Kind == yaml.ScalarNode && k.Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}
