package resolve

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
)

// The limits of a kubeadm config file (YAML), checked by a lexical pre-scan
// before the YAML library sees a document; see "Limits" in the package
// documentation. go-yaml v2 stops at 10,000 levels of nesting and at a ratio
// of alias-driven decodes, but within 4 MiB it still spends a minute (and
// 16 GB of allocations) on many small documents that each stay under its
// alias ratio, and 1.8 GB on one long scalar aliased 100 times; a flat
// 4 MiB document takes 400 MB. kubeadm writes no anchors and about five
// levels of nesting; a complete config (InitConfiguration,
// ClusterConfiguration, KubeletConfiguration, KubeProxyConfiguration, as
// `kubeadm config print init-defaults` prints them) has about 250 keys in
// four documents.
const (
	// maxYAMLDepth bounds the nesting of collections, block (indentation)
	// and flow ([ {) together: 20 times a kubeadm config's, and a hundredth
	// of go-yaml's own limit.
	maxYAMLDepth = 100
	// maxYAMLNodes bounds the nodes of a file after alias expansion,
	// counted from above by tokens: a collection counts 1, a scalar 2 (in
	// a flow mapping it may stand for a key and its empty value), "-" 1,
	// ":" and "?" 2, a tag or an anchor 1; "key: value" counts 6. A
	// complete kubeadm config counts about 1,500 (the three-document one
	// in the tests 321); go-yaml and the JSON round trip of
	// sigs.k8s.io/yaml decode 100,000 in about 0.1 s and 16 MB.
	maxYAMLNodes = 100_000
	// maxYAMLAliasBytes bounds the bytes that aliases repeat, over the
	// file: go-yaml shares an aliased string, but the JSON it is turned
	// into copies it for every alias. A config that shares a list of
	// extraVolumes repeats a few hundred bytes.
	maxYAMLAliasBytes = 1 << 20
	// maxYAMLAnchors bounds anchors and aliases together, over the file;
	// kubeadm writes none, a hand-written config shares a few values.
	maxYAMLAnchors = 1000
	// maxYAMLDocuments bounds the non-empty documents of a file; each costs
	// the YAML library about 7 KB and 15 µs to set up, and kubeadm's own
	// files have at most five.
	maxYAMLDocuments = 1000
)

// yamlLimits checks the documents of one YAML file against the limits
// above, before each is decoded. Its counts run over the whole file.
//
// The scan follows go-yaml's (libyaml's) scanner closely enough to know, for
// every byte, whether it is inside a comment, a quoted, plain or block
// scalar, or a token: the flow level, the stack of block indentation
// columns and the "simple key" that opens a block mapping are tracked as
// the scanner tracks them, so that a block scalar or a multi-line plain
// scalar ends where go-yaml ends it. Where go-yaml would report a syntax
// error the scan may count differently; go-yaml stops there anyway.
//
// Alias expansion is bounded from above by where an anchored node must
// have ended: at the next entry of the collection the anchor is in (a new
// key or "-" at its column, a "," at its flow level), or when that
// collection ends; an alias then adds what was counted (aliases expanded)
// from the anchor to there. An alias of an anchor whose node has not ended
// by that measure adds what was counted since the anchor, and one of an
// anchor the scan did not see what was counted since the document's start:
// the node lies before the alias either way. Each step is linear in the
// bytes scanned; anchors are closed from a stack.
type yamlLimits struct {
	path      string
	nodes     int // tokens so far, aliases expanded
	aliasB    int // bytes repeated by aliases so far
	anchors   int // anchors and aliases so far
	docs      int // non-empty documents so far
	deepest   int // deepest nesting of the current document, aliases expanded
	docNodes  int // nodes at the start of the current document
	docBytes  int // expanded bytes at the start of the current document
	marks     map[string]yamlMark
	open      []yamlOpen // anchors whose node may not have ended, by level
	fileBytes int        // bytes of the file before the current document
}

// yamlMark is an anchor: the counts where it was defined and, once its node
// has ended, the node's size.
type yamlMark struct {
	id           int // which anchor of the file; a later one of the same name replaces it
	nodes, bytes int // counts at the anchor, or the node's size when closed
	depth        int // when closed, how much deeper than the anchor its node goes
	closed       bool
}

// yamlOpen is an anchor whose node may not have ended.
type yamlOpen struct {
	name   string
	id     int
	level  int  // block levels, plus flow levels inside them, at the anchor
	inItem bool // in an item of a sequence that is not indented under its key
	depth  int  // nesting at the anchor
	max    int  // the deepest nesting seen since the anchor (so far as propagated)
}

// yamlFlow is an open flow collection.
type yamlFlow struct {
	seq  bool // a sequence ([), else a mapping
	pair bool // its current entry is a single-pair mapping ("[a: b]"), a level deeper
}

// yamlLevel is a block collection on libyaml's indentation stack.
type yamlLevel struct {
	col        int
	seq        bool // a sequence ("-"), else a mapping
	indentless bool // a mapping whose current value is a sequence at its own column
}

// yamlKey is a possible simple key: a token that becomes a mapping key if a
// ':' follows on the same line (within 1024 bytes, as libyaml allows).
type yamlKey struct {
	possible bool
	col      int // column (in characters) where the key starts
	line     int // YAML line (any line break counts) of the key
	ci       int // character offset of the key
}

// yamlScan is the state of the scan of one document.
type yamlScan struct {
	l       *yamlLimits
	b       []byte
	i       int         // byte offset in b
	col     int         // column in characters, as libyaml counts them
	ci      int         // characters before b[i]
	yline   int         // lines as libyaml counts them (CR, LF, CRLF, NEL, LS, PS)
	line    int         // 1-based line in the file (counting LF only) of b[i]
	flow    int         // flow level
	indents []yamlLevel // libyaml's stack of block indentation columns
	// indentless counts the levels of indents whose value is a sequence at
	// the key's column.
	indentless int
	flows      []yamlFlow // the open flow collections
	pairs      int        // flows that hold a single-pair mapping ("[a: b]")
	keys       []yamlKey
	keyOK      bool // libyaml's simple_key_allowed
}

// document checks one document of the file, text, which starts at the
// 1-based line firstLine and at byte offset off of the file.
func (l *yamlLimits) document(text []byte, firstLine, off int) error {
	l.docs++
	if l.docs > maxYAMLDocuments {
		return configErr(l.path, "", firstLine, fmt.Errorf("%w: more than %d YAML documents", ErrLimit, maxYAMLDocuments))
	}
	l.fileBytes = off
	l.docNodes, l.docBytes, l.deepest = l.nodes, l.fileBytes+l.aliasB, 0
	clear(l.marks)
	l.open = l.open[:0]
	s := &yamlScan{l: l, b: utf8YAML(text), line: firstLine, keys: []yamlKey{{}}, keyOK: true}
	return s.run()
}

// utf8YAML returns text as the YAML library reads it, in UTF-8: a
// document that starts with a UTF-16 byte order mark is UTF-16.
func utf8YAML(text []byte) []byte {
	var order binary.ByteOrder
	switch {
	case bytes.HasPrefix(text, []byte{0xFF, 0xFE}):
		order = binary.LittleEndian
	case bytes.HasPrefix(text, []byte{0xFE, 0xFF}):
		order = binary.BigEndian
	default:
		return text
	}
	u := make([]uint16, 0, len(text)/2)
	for i := 2; i+1 < len(text); i += 2 {
		u = append(u, order.Uint16(text[i:]))
	}
	var out []byte
	for _, r := range utf16.Decode(u) {
		out = utf8.AppendRune(out, r)
	}
	return out
}

// limitErr is the error of a limit passed at the scan's current line.
func (s *yamlScan) limitErr(format string, args ...any) error {
	return configErr(s.l.path, "", s.line, fmt.Errorf("%w: "+format, append([]any{ErrLimit}, args...)...))
}

// breakLen returns the length of the line break at b[i], 0 if there is none.
func (s *yamlScan) breakLen(i int) int {
	b := s.b
	if i >= len(b) {
		return 0
	}
	switch b[i] {
	case '\n':
		return 1
	case '\r':
		if i+1 < len(b) && b[i+1] == '\n' {
			return 2
		}
		return 1
	case 0xC2: // NEL
		if i+1 < len(b) && b[i+1] == 0x85 {
			return 2
		}
	case 0xE2: // LS, PS
		if i+2 < len(b) && b[i+1] == 0x80 && (b[i+2] == 0xA8 || b[i+2] == 0xA9) {
			return 3
		}
	}
	return 0
}

func (s *yamlScan) blank(i int) bool {
	return i < len(s.b) && (s.b[i] == ' ' || s.b[i] == '\t')
}

// blankz reports whether b[i] is a blank, a line break, NUL or the end.
func (s *yamlScan) blankz(i int) bool {
	return i >= len(s.b) || s.b[i] == ' ' || s.b[i] == '\t' || s.b[i] == 0 || s.breakLen(i) > 0
}

// next moves past one byte that is not a line break; a column is a
// character, as in libyaml.
func (s *yamlScan) next() {
	if s.b[s.i]&0xC0 != 0x80 {
		s.col++
		s.ci++
	}
	s.i++
}

// newline moves past the line break at b[i], of length n.
func (s *yamlScan) newline(n int) {
	if s.b[s.i+n-1] == '\n' {
		s.line++
	}
	s.i += n
	s.col = 0
	s.yline++
}

// key is the simple key slot of the current flow level.
func (s *yamlScan) key() *yamlKey { return &s.keys[len(s.keys)-1] }

// saveKey records a possible simple key at the current token, as
// yaml_parser_save_simple_key does.
func (s *yamlScan) saveKey() {
	if s.keyOK {
		*s.key() = yamlKey{possible: true, col: s.col, line: s.yline, ci: s.ci}
	}
}

// roll pushes col on the indentation stack when it is deeper than the top,
// as yaml_parser_roll_indent does in block context. A token at the top's
// column starts a new entry there: what was anchored in the last one has
// ended. entry is "-" for a sequence entry, ':' or '?' for a key.
func (s *yamlScan) roll(col int, entry byte) error {
	if s.flow > 0 {
		return nil
	}
	n := len(s.indents)
	if n == 0 || s.indents[n-1].col < col {
		s.indents = append(s.indents, yamlLevel{col: col, seq: entry == '-'})
		return s.depth()
	}
	if top := &s.indents[n-1]; top.col == col {
		switch {
		case entry == '-' && !top.seq:
			// An item of a sequence at its key's column.
			s.closeAnchors(n, true)
			if !top.indentless {
				top.indentless = true
				s.indentless++
				return s.depth()
			}
		case entry == '-' || entry == '?' || !top.seq:
			s.closeAnchors(n, false)
			if top.indentless {
				top.indentless = false
				s.indentless--
			}
		}
	}
	return nil
}

// unroll pops the block collections deeper than col, as
// yaml_parser_unroll_indent does.
func (s *yamlScan) unroll(col int) {
	n := len(s.indents)
	for n > 0 && s.indents[n-1].col > col {
		n--
	}
	if n < len(s.indents) {
		for _, p := range s.indents[n:] {
			if p.indentless {
				s.indentless--
			}
		}
		s.indents = s.indents[:n]
		s.closeAnchors(n+1, false)
	}
}

// closeAnchors ends the nodes of the open anchors at level and deeper;
// with items, only those in an indentless item at level itself.
func (s *yamlScan) closeAnchors(level int, items bool) {
	l := s.l
	for n := len(l.open); n > 0; n-- {
		o := l.open[n-1]
		if o.level < level || o.level == level && items && !o.inItem {
			return
		}
		l.open = l.open[:n-1]
		if n > 1 {
			l.open[n-2].max = max(l.open[n-2].max, o.max)
		}
		if m, ok := l.marks[o.name]; ok && m.id == o.id {
			l.marks[o.name] = yamlMark{id: o.id, nodes: l.nodes - m.nodes, bytes: s.expanded() - m.bytes, depth: o.max - o.depth, closed: true}
		}
	}
}

// level is the depth of the current position: block levels, and flow
// levels inside them.
func (s *yamlScan) level() int { return len(s.indents) + s.flow }

// indent is libyaml's parser.indent: the column of the innermost block
// collection, -1 outside any.
func (s *yamlScan) indent() int {
	if n := len(s.indents); n > 0 {
		return s.indents[n-1].col
	}
	return -1
}

// pair notes a key or value indicator: in a flow sequence it opens a
// single-pair mapping, one level deeper.
func (s *yamlScan) pair() error {
	if s.flow == 0 {
		return nil
	}
	if f := &s.flows[len(s.flows)-1]; f.seq && !f.pair {
		f.pair = true
		s.pairs++
		return s.depth()
	}
	return nil
}

// endPair ends the entry of the innermost flow collection.
func (s *yamlScan) endPair() {
	if f := &s.flows[len(s.flows)-1]; f.pair {
		f.pair = false
		s.pairs--
	}
}

// nesting is how deep collections nest here: block collections (and the
// sequences at their key's column, which have no level of their own), and
// flow ones inside them.
func (s *yamlScan) nesting() int { return len(s.indents) + s.indentless + s.flow + s.pairs }

// depth checks the nesting after a collection was opened, and counts the
// collection.
func (s *yamlScan) depth() error {
	if d := s.nesting(); d > maxYAMLDepth {
		return s.limitErr("YAML collections nested more than %d deep (%d block, %d flow)", maxYAMLDepth, len(s.indents)+s.indentless, s.flow+s.pairs)
	}
	s.reach(s.nesting())
	return s.count(1)
}

// reach records that the document nests d deep here.
func (s *yamlScan) reach(d int) {
	l := s.l
	l.deepest = max(l.deepest, d)
	if n := len(l.open); n > 0 {
		l.open[n-1].max = max(l.open[n-1].max, d)
	}
}

// count adds n nodes.
func (s *yamlScan) count(n int) error {
	s.l.nodes += n
	if s.l.nodes > maxYAMLNodes {
		return s.limitErr("more than %d YAML nodes (aliases expanded)", maxYAMLNodes)
	}
	return nil
}

// expanded returns the bytes counted so far, aliases expanded.
func (s *yamlScan) expanded() int { return s.l.fileBytes + s.i + s.l.aliasB }

func (s *yamlScan) run() error {
	for {
		s.skipToToken()
		if s.i >= len(s.b) {
			return nil
		}
		if s.flow == 0 {
			s.unroll(s.col)
		}
		if err := s.token(); err != nil {
			return err
		}
	}
}

// skipToToken skips blanks, comments and line breaks, as
// yaml_parser_scan_to_next_token does.
func (s *yamlScan) skipToToken() {
	for s.i < len(s.b) {
		if s.col == 0 && s.i+2 < len(s.b) && s.b[s.i] == 0xEF && s.b[s.i+1] == 0xBB && s.b[s.i+2] == 0xBF {
			s.i += 3 // BOM
		}
		for s.i < len(s.b) && (s.b[s.i] == ' ' || (s.flow > 0 || !s.keyOK) && s.b[s.i] == '\t') {
			s.next()
		}
		if s.i < len(s.b) && s.b[s.i] == '#' {
			for s.i < len(s.b) && s.b[s.i] != 0 && s.breakLen(s.i) == 0 {
				s.next()
			}
		}
		n := s.breakLen(s.i)
		if n == 0 {
			return
		}
		s.newline(n)
		if s.flow == 0 {
			s.keyOK = true
		}
	}
}

// marker reports whether a document marker ("---" or "...") starts at
// b[i], at column 0.
func (s *yamlScan) marker() bool {
	b, i := s.b, s.i
	return s.col == 0 && i+2 < len(b) && (b[i] == '-' && b[i+1] == '-' && b[i+2] == '-' || b[i] == '.' && b[i+1] == '.' && b[i+2] == '.') &&
		s.blankz(i+3)
}

// token scans one token at b[i], as yaml_parser_fetch_next_token does.
func (s *yamlScan) token() error {
	b, c := s.b, s.b[s.i]
	switch {
	case s.marker():
		// A document marker inside what the caller took for one document:
		// go-yaml decodes only the first document, counting on is safe.
		s.closeAnchors(0, false)
		s.flow, s.indents, s.indentless, s.keys, s.keyOK = 0, s.indents[:0], 0, s.keys[:1], false
		s.flows, s.pairs = s.flows[:0], 0
		s.keys[0] = yamlKey{}
		s.i += 3
		s.col += 3
		return nil
	case s.col == 0 && c == '%': // a directive
		for s.i < len(b) && s.breakLen(s.i) == 0 {
			s.next()
		}
		return nil
	case c == '[' || c == '{':
		s.saveKey()
		s.flow++
		s.keys = append(s.keys, yamlKey{})
		s.flows = append(s.flows, yamlFlow{seq: c == '['})
		s.keyOK = true
		s.next()
		return s.depth()
	case c == ']' || c == '}':
		// The inner level's key goes; the outer one may still become a
		// key ("[a, b]: c").
		if s.flow > 0 {
			s.closeAnchors(s.level(), false)
			s.endPair()
			s.flow--
			s.keys = s.keys[:len(s.keys)-1]
			s.flows = s.flows[:len(s.flows)-1]
		} else {
			s.key().possible = false
		}
		s.keyOK = false
		s.next()
		return nil
	case c == ',':
		if s.flow > 0 {
			s.closeAnchors(s.level(), false)
			s.endPair()
		}
		s.key().possible = false
		s.keyOK = true
		s.next()
		return nil
	case c == '-' && s.blankz(s.i+1):
		if err := s.roll(s.col, '-'); err != nil {
			return err
		}
		s.key().possible = false
		s.keyOK = true
		s.next()
		return s.count(1)
	case c == '?' && (s.flow > 0 || s.blankz(s.i+1)):
		if err := s.roll(s.col, '?'); err != nil {
			return err
		}
		if err := s.pair(); err != nil {
			return err
		}
		s.key().possible = false
		s.keyOK = s.flow == 0
		s.next()
		return s.count(2) // an empty key and value
	case c == ':' && (s.flow > 0 || s.blankz(s.i+1)):
		// A key is stale past its line or 1024 characters, as
		// yaml_simple_key_is_valid says.
		if k := s.key(); k.possible && k.line == s.yline && s.ci <= k.ci+1024 {
			k.possible = false
			s.keyOK = false
			if err := s.roll(k.col, ':'); err != nil {
				return err
			}
		} else {
			// A value without a simple key (": x" after "? k").
			if err := s.roll(s.col, ':'); err != nil {
				return err
			}
			s.keyOK = s.flow == 0
		}
		if err := s.pair(); err != nil {
			return err
		}
		s.next()
		return s.count(2) // an empty value, and key
	case c == '*' || c == '&':
		s.saveKey()
		s.keyOK = false
		start := s.i + 1
		s.next()
		for s.i < len(b) && isYAMLAnchorChar(b[s.i]) {
			s.next()
		}
		return s.anchor(c == '*', string(b[start:s.i]))
	case c == '!':
		s.saveKey()
		s.keyOK = false
		for !s.blankz(s.i) {
			s.next()
		}
		return s.count(1) // a tag may stand for an empty node

	case (c == '|' || c == '>') && s.flow == 0:
		s.key().possible = false
		s.keyOK = true
		s.blockScalar()
		return s.count(2)
	case c == '\'' || c == '"':
		s.saveKey()
		s.keyOK = false
		s.quoted(c)
		return s.count(2)
	case !s.blankz(s.i) && !isYAMLIndicator(c) ||
		c == '-' && !s.blank(s.i+1) ||
		s.flow == 0 && (c == '?' || c == ':') && !s.blankz(s.i+1):
		s.saveKey()
		s.keyOK = false
		if s.plain() {
			s.keyOK = true
		}
		return s.count(2)
	default:
		// A character that cannot start a token (go-yaml fails here).
		s.next()
		return nil
	}
}

// anchor records an anchor or expands an alias named name.
func (s *yamlScan) anchor(alias bool, name string) error {
	l := s.l
	if l.anchors++; l.anchors > maxYAMLAnchors {
		return s.limitErr("more than %d YAML anchors and aliases", maxYAMLAnchors)
	}
	if !alias {
		if l.marks == nil {
			l.marks = map[string]yamlMark{}
		}
		l.marks[name] = yamlMark{id: l.anchors, nodes: l.nodes, bytes: s.expanded()}
		inItem := s.flow == 0 && len(s.indents) > 0 && s.indents[len(s.indents)-1].indentless
		l.open = append(l.open, yamlOpen{name: name, id: l.anchors, level: s.level(), inItem: inItem, depth: s.nesting(), max: s.nesting()})
		return s.count(1) // an anchor may stand for an empty node
	}
	// The anchored node ended before this alias (go-yaml refuses an
	// alias inside its own anchor's node).
	var nodes, size, depth int
	switch m, ok := l.marks[name]; {
	case ok && m.closed:
		nodes, size, depth = m.nodes, m.bytes, m.depth
	case ok:
		nodes, size, depth = l.nodes-m.nodes, s.expanded()-m.bytes, l.deepest
	default:
		nodes, size, depth = l.nodes-l.docNodes, s.expanded()-l.docBytes, l.deepest
	}
	// The alias's node nests as deep here as it did at its anchor.
	d := s.nesting() + depth
	if d > maxYAMLDepth {
		return s.limitErr("YAML collections nested more than %d deep (aliases expanded)", maxYAMLDepth)
	}
	s.reach(d)
	l.aliasB += size
	if l.aliasB > maxYAMLAliasBytes {
		return s.limitErr("YAML aliases repeat more than %d bytes", maxYAMLAliasBytes)
	}
	return s.count(nodes + 2)
}

// isYAMLAnchorChar reports whether c may be part of an anchor name, as
// go-yaml v2's is_alpha says.
func isYAMLAnchorChar(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' || c == '-'
}

// isYAMLIndicator reports whether c is one of the characters that cannot
// start a plain scalar (in libyaml's fetch_next_token).
func isYAMLIndicator(c byte) bool {
	switch c {
	case '-', '?', ':', ',', '[', ']', '{', '}', '#', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`':
		return true
	}
	return false
}

// quoted skips a single- or double-quoted scalar that starts at b[i]; it
// may span lines. It ends at the closing quote, or at the end of the
// document (where go-yaml fails).
func (s *yamlScan) quoted(q byte) {
	s.next()
	for s.i < len(s.b) {
		c := s.b[s.i]
		if n := s.breakLen(s.i); n > 0 {
			s.newline(n)
			continue
		}
		switch {
		case q == '\'' && c == '\'' && s.i+1 < len(s.b) && s.b[s.i+1] == '\'':
			s.next() // '' is a quote
		case q == '\'' && c == '\'', q == '"' && c == '"':
			s.next()
			return
		case q == '"' && c == '\\' && s.i+1 < len(s.b):
			s.next()
			if n := s.breakLen(s.i); n > 0 {
				s.newline(n)
				continue
			}
		}
		s.next()
	}
}

// plain skips a plain scalar that starts at b[i], as
// yaml_parser_scan_plain_scalar does: in block context it goes on over the
// next lines while they are indented deeper than the current block
// collection. It reports whether it went past a line break.
func (s *yamlScan) plain() bool {
	indent := s.indent() + 1
	leading := false
	for s.i < len(s.b) {
		if s.marker() || s.b[s.i] == '#' {
			break
		}
		for !s.blankz(s.i) {
			c := s.b[s.i]
			if c == ':' && s.blankz(s.i+1) ||
				s.flow > 0 && (c == ',' || c == '?' || c == '[' || c == ']' || c == '{' || c == '}') {
				break
			}
			leading = false
			s.next()
		}
		if !s.blank(s.i) && s.breakLen(s.i) == 0 {
			break
		}
		for {
			if s.blank(s.i) {
				s.next()
			} else if n := s.breakLen(s.i); n > 0 {
				s.newline(n)
				leading = true
			} else {
				break
			}
		}
		if s.flow == 0 && s.col < indent {
			break
		}
	}
	return leading
}

// blockScalar skips a literal (|) or folded (>) scalar, header and
// content, as yaml_parser_scan_block_scalar does: its content is the lines
// indented at least as deep as the first non-empty one (or as the
// indentation indicator says), and at least one column deeper than the
// current block collection.
func (s *yamlScan) blockScalar() {
	s.next()
	increment := 0
	for k := 0; k < 2 && s.i < len(s.b); k++ { // chomping and indentation indicators, in either order
		if c := s.b[s.i]; c == '+' || c == '-' {
			s.next()
		} else if c >= '1' && c <= '9' {
			increment = int(c - '0')
			s.next()
		}
	}
	for s.i < len(s.b) && s.breakLen(s.i) == 0 { // blanks, a comment (or an error go-yaml reports)
		s.next()
	}
	if s.i >= len(s.b) {
		return
	}
	s.newline(s.breakLen(s.i))
	indent := 0
	if increment > 0 {
		indent = increment
		if s.indent() >= 0 {
			indent += s.indent()
		}
	}
	// Leading empty lines: with no indicator, the deepest one counts.
	maxIndent := 0
	for {
		for s.i < len(s.b) && s.b[s.i] == ' ' && (indent == 0 || s.col < indent) {
			s.next()
		}
		maxIndent = max(maxIndent, s.col)
		n := s.breakLen(s.i)
		if n == 0 {
			break
		}
		s.newline(n)
	}
	if indent == 0 {
		indent = max(maxIndent, s.indent()+1, 1)
	}
	// Content lines: those that reach the indentation.
	for s.i < len(s.b) && s.col == indent {
		for s.i < len(s.b) && s.breakLen(s.i) == 0 {
			s.next()
		}
		if s.i >= len(s.b) {
			return
		}
		s.newline(s.breakLen(s.i))
		for {
			for s.i < len(s.b) && s.b[s.i] == ' ' && s.col < indent {
				s.next()
			}
			n := s.breakLen(s.i)
			if n == 0 {
				break
			}
			s.newline(n)
		}
	}
}
