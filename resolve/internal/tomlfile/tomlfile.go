package tomlfile

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	burntsushi "github.com/BurntSushi/toml"
	gotoml "github.com/pelletier/go-toml/v2"
)

// Decoder names the TOML decoder whose verdict a file gets: the one its
// runtime reads it with.
type Decoder uint8

const (
	// GoTOML is github.com/pelletier/go-toml/v2, containerd 2.x's decoder
	// (cmd/containerd/server/config/config.go at v2.2.9 and v2.4.2).
	GoTOML Decoder = iota
	// BurntSushi is github.com/BurntSushi/toml, CRI-O's decoder
	// (pkg/config/config.go, UpdateFromDropInFile, toml.Decode, at v1.36.3).
	BurntSushi
)

// Error is a file that was refused: by the decoder, by a limit (Err wraps
// nodefs.ErrLimit) or for a value of the wrong type.
type Error struct {
	Line int    // 1-based, 0 if unknown
	Key  string // key path as written in TOML, "" if unknown
	Err  error  // the decoder's error, or the cause
}

func (e *Error) Error() string { return fmt.Sprintf("line %d: %s: %v", e.Line, e.Key, e.Err) }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Doc is a decoded file with the line of every key path written outside
// arrays.
type Doc struct {
	root    map[string]any
	lines   map[string]int
	entries int
}

// Parse checks b against MaxDepth and at most min(maxEntries, MaxEntries)
// tables and keys, and decodes it with dec. Every error is an *Error.
func Parse(b []byte, dec Decoder, maxEntries int) (*Doc, error) {
	s, err := scan(b, min(maxEntries, MaxEntries))
	if err != nil {
		return nil, err
	}
	root, err := decode(b, dec)
	if err != nil {
		e := &Error{Err: err}
		var pe burntsushi.ParseError
		var de *gotoml.DecodeError
		switch {
		case errors.As(err, &pe) && pe.Position.Line > 0:
			// Counted from the offset: at a line's end, Line is the next.
			e.Line, e.Key = 1+bytes.Count(b[:min(max(pe.Position.Start, 0), len(b))], []byte{'\n'}), pe.LastKey
		case errors.As(err, &de):
			e.Line, _ = de.Position()
			e.Key = Key(de.Key()...)
		default:
			// go-toml reports a key or table defined twice without a
			// position: the first expression after which a prefix of the
			// file no longer decodes is the one refused.
			if x, ok := s.firstRefused(dec); ok {
				e.Line, e.Key = x.line, Key(x.path...)
			}
		}
		return nil, e
	}
	return &Doc{root: root, lines: s.lines, entries: s.entries}, nil
}

// Entries returns the tables and keys of the file, as the limit counts
// them.
func (d *Doc) Entries() int { return d.entries }

// decode decodes b with dec.
func decode(b []byte, dec Decoder) (map[string]any, error) {
	root := map[string]any{}
	if dec == BurntSushi {
		_, err := burntsushi.Decode(string(b), &root)
		return root, err
	}
	return root, gotoml.Unmarshal(b, &root)
}

// firstRefused returns the expression whose addition makes the file's
// prefix fail to decode, by bisection: a few decodes, on the error path
// only.
func (s *scanner) firstRefused(dec Decoder) (expr, bool) {
	end := func(k int) int {
		if k+1 < len(s.exprs) {
			return s.exprs[k+1].off
		}
		return len(s.b)
	}
	k := sort.Search(len(s.exprs), func(k int) bool {
		_, err := decode(s.b[:end(k)], dec)
		return err != nil
	})
	if k == len(s.exprs) {
		return expr{}, false
	}
	return s.exprs[k], true
}

// Lookup returns the value at a key path.
func (d *Doc) Lookup(keys ...string) (any, bool) {
	t := d.root
	for _, k := range keys[:len(keys)-1] {
		next, ok := t[k].(map[string]any)
		if !ok {
			return nil, false
		}
		t = next
	}
	v, ok := t[keys[len(keys)-1]]
	return v, ok
}

// Line returns the line a key path is written on, or that of its nearest
// parent written in the file (a key inside an inline table in an array),
// or 0.
func (d *Doc) Line(keys ...string) int {
	for n := len(keys); n > 0; n-- {
		if l := d.lines[pathKey(keys[:n])]; l > 0 {
			return l
		}
	}
	return 0
}

func (d *Doc) wrong(keys []string, format string, args ...any) error {
	return &Error{Line: d.Line(keys...), Key: Key(keys...), Err: fmt.Errorf(format, args...)}
}

// String returns a string value; ok is false when the key is absent, and a
// value of another type is an *Error.
func (d *Doc) String(keys ...string) (s string, ok bool, err error) {
	v, ok := d.Lookup(keys...)
	if !ok {
		return "", false, nil
	}
	s, isStr := v.(string)
	if !isStr {
		return "", false, d.wrong(keys, "want a string, got %s", TypeName(v))
	}
	return s, true, nil
}

// Strings returns an array of strings; ok is false when the key is absent.
func (d *Doc) Strings(keys ...string) (out []string, ok bool, err error) {
	v, ok := d.Lookup(keys...)
	if !ok {
		return nil, false, nil
	}
	arr, isArr := v.([]any)
	if !isArr {
		return nil, false, d.wrong(keys, "want an array of strings, got %s", TypeName(v))
	}
	out = make([]string, 0, len(arr))
	for i, e := range arr {
		s, isStr := e.(string)
		if !isStr {
			return nil, false, d.wrong(keys, "element %d: want a string, got %s", i, TypeName(e))
		}
		out = append(out, s)
	}
	return out, true, nil
}

// Table returns a table; ok is false when the key is absent.
func (d *Doc) Table(keys ...string) (map[string]any, bool, error) {
	v, ok := d.Lookup(keys...)
	if !ok {
		return nil, false, nil
	}
	t, isTable := v.(map[string]any)
	if !isTable {
		return nil, false, d.wrong(keys, "want a table, got %s", TypeName(v))
	}
	return t, true, nil
}

// Key renders a key path the way a user would write it in TOML.
func Key(keys ...string) string {
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte('.')
		}
		if k != "" && strings.IndexFunc(k, func(r rune) bool { return !isBareKeyRune(r) }) < 0 {
			b.WriteString(k)
		} else {
			fmt.Fprintf(&b, "%q", k)
		}
	}
	return b.String()
}

// TypeName names the TOML type of a decoded value, for messages.
func TypeName(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case int64:
		return "an integer"
	case float64:
		return "a float"
	case bool:
		return "a boolean"
	case time.Time, gotoml.LocalDate, gotoml.LocalTime, gotoml.LocalDateTime:
		return "a date-time"
	case []any:
		return "an array"
	case map[string]any:
		return "a table"
	case []map[string]any:
		return "an array of tables"
	}
	return fmt.Sprintf("%T", v)
}
