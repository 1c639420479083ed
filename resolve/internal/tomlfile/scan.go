package tomlfile

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/sandboxpin/sandboxpin/resolve/internal/nodefs"
)

// Limits on one TOML file, checked by [scan] before a decoder sees it.
// containerd's and CRI-O's own default configs have about a hundred
// tables, key paths of at most 7 parts
// (plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options)
// and arrays two deep.
const (
	// MaxDepth bounds the brackets ('[' and '{') open at once plus the
	// parts of the key written inside them, and the parts of a [header]:
	// the decoders recurse once per level.
	MaxDepth = 64
	// MaxEntries bounds the tables ([headers], [[headers]], inline tables)
	// and keys of one file, 40 times a default containerd config's (about
	// 100): go-toml's decoder takes time quadratic in their number (v2.2.2
	// on one core: 30–40 ms for 2,048, 75–100 ms for 4,096, 440–600 ms for
	// 8,192; 3.7–5.5 s for 40,000 tables), BurntSushi's linear.
	MaxEntries = 4096
)

// frame is one open bracket.
type frame struct {
	inline bool     // '{' (keys follow), not '['
	prefix []string // key path of the inline table; nil when not indexable
}

// scanner is one pass over a TOML file, lexed as TOML lexes it so that
// brackets inside strings and comments do not count. It checks the limits
// and records the line of each key path written outside arrays. Where the
// file is not valid TOML, the decoder refuses it anyway: the scan only has
// to stay linear there.
type scanner struct {
	b       []byte
	i       int
	line    int
	entries int // tables and keys so far
	max     int // limit on entries
	stack   []frame
	table   []string // key path of the last [header]
	last    []string // key path of the last key read
	atKey   bool     // a key may start here
	lines   map[string]int
	exprs   []expr // the expressions outside brackets, in order
}

// expr is where a [header] or key/value pair outside brackets starts.
type expr struct {
	off, line int
	path      []string // its key path; nil if it could not be read
}

// scan checks b against MaxDepth and at most maxEntries tables and keys,
// and indexes it.
func scan(b []byte, maxEntries int) (*scanner, error) {
	s := &scanner{b: b, line: 1, atKey: true, lines: map[string]int{}, max: maxEntries}
	if bytes.HasPrefix(b, []byte("\xef\xbb\xbf")) { // a byte order mark
		s.i = 3
	}
	for s.i < len(b) {
		if err := s.step(); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func (s *scanner) limit(format string, args ...any) error {
	return &Error{Line: s.line, Err: fmt.Errorf("%w: "+format, append([]any{nodefs.ErrLimit}, args...)...)}
}

func (s *scanner) step() error {
	c := s.b[s.i]
	switch {
	case c == '\n':
		s.line++
		s.i++
		if len(s.stack) == 0 {
			s.atKey = true
		}
	case c == ' ' || c == '\t' || c == '\r':
		s.i++
	case c == '#':
		for s.i < len(s.b) && s.b[s.i] != '\n' {
			s.i++
		}
	case s.atKey && len(s.stack) == 0 && c == '[':
		s.exprs = append(s.exprs, expr{off: s.i, line: s.line})
		return s.header()
	case s.atKey && c != ']' && c != '}':
		if len(s.stack) == 0 {
			s.exprs = append(s.exprs, expr{off: s.i, line: s.line})
		}
		return s.key()
	case c == '"' || c == '\'':
		s.skipString()
	case c == '[' || c == '{':
		f := frame{inline: c == '{'}
		if f.inline {
			if err := s.count(); err != nil {
				return err
			}
			if len(s.stack) == 0 || s.stack[len(s.stack)-1].prefix != nil {
				f.prefix = s.last
			}
		}
		if s.stack = append(s.stack, f); len(s.stack) > MaxDepth {
			return s.limit("more than %d arrays or inline tables open at once", MaxDepth)
		}
		s.atKey = f.inline
		s.i++
	case c == ']' || c == '}':
		if len(s.stack) > 0 {
			s.stack = s.stack[:len(s.stack)-1]
		}
		s.i++
	case c == ',':
		s.atKey = len(s.stack) > 0 && s.stack[len(s.stack)-1].inline
		s.i++
	default:
		s.i++
	}
	return nil
}

// header reads a [header] or [[header]].
func (s *scanner) header() error {
	s.atKey = false
	s.i++
	if s.i < len(s.b) && s.b[s.i] == '[' {
		s.i++
	}
	if err := s.count(); err != nil {
		return err
	}
	parts, err := s.keyParts(0)
	if err != nil || parts == nil {
		return err
	}
	s.table = parts
	s.exprs[len(s.exprs)-1].path = parts
	s.record(parts)
	return nil
}

// count charges one table or key.
func (s *scanner) count() error {
	if s.entries++; s.entries > s.max {
		return s.limit("more than %d tables and keys", s.max)
	}
	return nil
}

// key reads the key of a key/value pair.
func (s *scanner) key() error {
	s.atKey = false
	if err := s.count(); err != nil {
		return err
	}
	depth := len(s.stack)
	parts, err := s.keyParts(depth)
	if err != nil || parts == nil {
		return err
	}
	var prefix []string
	switch {
	case depth == 0:
		prefix = s.table
	case s.stack[depth-1].prefix != nil:
		prefix = s.stack[depth-1].prefix
	default:
		s.last = nil
		return nil
	}
	s.last = append(append(make([]string, 0, len(prefix)+len(parts)), prefix...), parts...)
	if depth == 0 {
		s.exprs[len(s.exprs)-1].path = s.last
	}
	s.record(s.last)
	return nil
}

func (s *scanner) record(path []string) {
	if k := pathKey(path); s.lines[k] == 0 {
		s.lines[k] = s.line
	}
}

// keyParts reads a dotted key up to the '=' or ']' after it (not
// consumed); depth is the brackets open. It returns nil parts where the
// bytes are not a key.
func (s *scanner) keyParts(depth int) ([]string, error) {
	var parts []string
	for {
		for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t') {
			s.i++
		}
		if s.i >= len(s.b) {
			return nil, nil
		}
		start := s.i
		switch c := s.b[s.i]; {
		case c == '"' || c == '\'':
			if s.i+2 < len(s.b) && s.b[s.i+1] == c && s.b[s.i+2] == c {
				return nil, nil // a multi-line string is no key
			}
			s.skipString()
			raw := string(s.b[start+1 : max(start+1, s.i-1)])
			if c == '"' {
				raw = unescape(raw)
			}
			parts = append(parts, raw)
		case isBareKeyByte(c):
			for s.i < len(s.b) && isBareKeyByte(s.b[s.i]) {
				s.i++
			}
			parts = append(parts, string(s.b[start:s.i]))
		default:
			return nil, nil
		}
		if depth+len(parts) > MaxDepth {
			return nil, s.limit("a key of more than %d parts", MaxDepth)
		}
		for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t') {
			s.i++
		}
		if s.i >= len(s.b) || s.b[s.i] != '.' {
			return parts, nil
		}
		s.i++
	}
}

func isBareKeyByte(c byte) bool { return isBareKeyRune(rune(c)) }

func isBareKeyRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_'
}

// skipString moves past the string that starts at s.i (a quote), or to the
// end of the line where a one-line string is left open, counting lines.
func (s *scanner) skipString() {
	b, q := s.b, s.b[s.i]
	escapes := q == '"'
	if s.i+2 < len(b) && b[s.i+1] == q && b[s.i+2] == q { // multi-line
		for j := s.i + 3; j < len(b); j++ {
			switch {
			case b[j] == '\n':
				s.line++
			case escapes && b[j] == '\\':
				if j+1 < len(b) && b[j+1] == '\n' {
					s.line++
				}
				j++
			case b[j] == q && j+2 < len(b) && b[j+1] == q && b[j+2] == q:
				// Up to two more quotes may end the content before the
				// closing three.
				j += 3
				for k := 0; k < 2 && j < len(b) && b[j] == q; k++ {
					j++
				}
				s.i = j
				return
			}
		}
		s.i = len(b)
		return
	}
	for j := s.i + 1; j < len(b); j++ {
		switch {
		case escapes && b[j] == '\\':
			if j+1 < len(b) && b[j+1] != '\n' {
				j++
			}
		case b[j] == q:
			s.i = j + 1
			return
		case b[j] == '\n':
			s.i = j // the newline is counted by step
			return
		}
	}
	s.i = len(b)
}

// pathKey is the index key of a key path.
func pathKey(path []string) string { return strings.Join(path, "\x00") }

// unescape decodes the escapes of a basic string's content (TOML 1.1's
// \e and \xHH included); an escape it does not know is kept as written.
func unescape(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		if r, ok := map[byte]rune{'b': '\b', 't': '\t', 'n': '\n', 'f': '\f', 'r': '\r', 'e': 0x1b, '"': '"', '\\': '\\'}[s[i]]; ok {
			b.WriteRune(r)
			continue
		}
		if n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[s[i]]; n > 0 && i+n < len(s) {
			if v, err := strconv.ParseInt(s[i+1:i+1+n], 16, 32); err == nil {
				b.WriteRune(rune(v)) // an invalid rune is written as U+FFFD
				i += n
				continue
			}
		}
		b.WriteByte('\\')
		b.WriteByte(s[i])
	}
	return b.String()
}
