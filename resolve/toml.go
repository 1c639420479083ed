package resolve

import (
	"errors"
	"fmt"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// tomlDoc is one decoded TOML file plus the line of every key in it.
type tomlDoc struct {
	path  string         // node path, "/etc/containerd/config.toml"
	data  map[string]any // decoded document
	lines map[string]int // joined key path (see keyPath) -> 1-based line
}

// keyPath joins key parts with a byte TOML keys cannot hold unquoted and
// that no sane config uses quoted.
func keyPath(keys ...string) string { return strings.Join(keys, "\x00") }

// displayKey renders a key path the way a user would write it in TOML.
func displayKey(keys ...string) string {
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

func isBareKeyRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_'
}

// parseTOML decodes b. Syntax and type errors become a *ConfigError with the
// line go-toml reports. Key lines come from go-toml's unstable parser (exact
// for keys written in [table] headers, dotted keys and inline tables).
func parseTOML(path string, b []byte) (*tomlDoc, error) {
	doc := &tomlDoc{path: path}
	if err := toml.Unmarshal(b, &doc.data); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			line, _ := de.Position()
			key := strings.Join(de.Key(), ".")
			return nil, configErr(path, key, line, err)
		}
		// go-toml before v2.3 reports a key defined twice without a
		// position; find it, so that the error still names key and line.
		if key, line := firstDuplicateKey(b); line > 0 {
			return nil, configErr(path, key, line, err)
		}
		return nil, configErr(path, "", 0, err)
	}
	doc.lines = tomlKeyLines(b)
	return doc, nil
}

// firstDuplicateKey returns the first key that b assigns twice, and the
// line of its second assignment, or ("", 0). Keys under an array of tables
// start afresh with each [[entry]].
func firstDuplicateKey(b []byte) (string, int) {
	idx := newLineIndex(b)
	seen := make(map[string]bool)
	var table []string
	var p unstable.Parser
	p.Reset(b)
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			table = table[:0]
			for it := e.Key(); it.Next(); {
				table = append(table, string(it.Node().Data))
			}
			if e.Kind == unstable.ArrayTable {
				prefix := keyPath(table...) + "\x00"
				for k := range seen {
					if strings.HasPrefix(k, prefix) {
						delete(seen, k)
					}
				}
			}
		case unstable.KeyValue:
			full := append([]string(nil), table...)
			off := uint32(0)
			for it := e.Key(); it.Next(); {
				full = append(full, string(it.Node().Data))
				off = it.Node().Raw.Offset
			}
			k := keyPath(full...)
			if seen[k] {
				return displayKey(full...), idx.line(int(off))
			}
			seen[k] = true
		}
	}
	return "", 0
}

// tomlKeyLines maps every key path in a valid document to the line it is
// written on. Keys introduced only by a table header map to that header's line.
func tomlKeyLines(b []byte) map[string]int {
	lines := make(map[string]int, 32)
	idx := newLineIndex(b)
	lineOf := func(off uint32) int { return idx.line(int(off)) }
	var table []string
	var walk func(prefix []string, kv *unstable.Node)
	walk = func(prefix []string, kv *unstable.Node) {
		full := append([]string(nil), prefix...)
		line := 0
		for it := kv.Key(); it.Next(); {
			k := it.Node()
			full = append(full, string(k.Data))
			line = lineOf(k.Raw.Offset)
			if _, ok := lines[keyPath(full...)]; !ok {
				lines[keyPath(full...)] = line
			}
		}
		lines[keyPath(full...)] = line
		if v := kv.Value(); v.Kind == unstable.InlineTable {
			for it := v.Children(); it.Next(); {
				if c := it.Node(); c.Kind == unstable.KeyValue {
					walk(full, c)
				}
			}
		}
	}
	var p unstable.Parser
	p.Reset(b)
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			table = table[:0]
			for it := e.Key(); it.Next(); {
				k := it.Node()
				table = append(table, string(k.Data))
				if _, ok := lines[keyPath(table...)]; !ok {
					lines[keyPath(table...)] = lineOf(k.Raw.Offset)
				}
			}
		case unstable.KeyValue:
			walk(table, e)
		}
	}
	return lines
}

// line returns the line of a key path, or 0 when it is not written in the
// file.
func (d *tomlDoc) line(keys ...string) int { return d.lines[keyPath(keys...)] }

// lookup walks nested tables.
func (d *tomlDoc) lookup(keys ...string) (any, bool) {
	var cur any = d.data
	for _, k := range keys {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[k]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// str returns a string value; a value of another type is a *ConfigError.
// ok is false when the key is absent.
func (d *tomlDoc) str(keys ...string) (s string, ok bool, err error) {
	v, ok := d.lookup(keys...)
	if !ok {
		return "", false, nil
	}
	s, isStr := v.(string)
	if !isStr {
		return "", false, configErr(d.path, displayKey(keys...), d.line(keys...),
			fmt.Errorf("want a string, got %T", v))
	}
	return s, true, nil
}

// strs returns a string array; ok is false when the key is absent.
func (d *tomlDoc) strs(keys ...string) (out []string, ok bool, err error) {
	v, ok := d.lookup(keys...)
	if !ok {
		return nil, false, nil
	}
	arr, isArr := v.([]any)
	if !isArr {
		return nil, false, configErr(d.path, displayKey(keys...), d.line(keys...),
			fmt.Errorf("want an array of strings, got %T", v))
	}
	out = make([]string, 0, len(arr))
	for i, e := range arr {
		s, isStr := e.(string)
		if !isStr {
			return nil, false, configErr(d.path, displayKey(keys...), d.line(keys...),
				fmt.Errorf("element %d: want a string, got %T", i, e))
		}
		out = append(out, s)
	}
	return out, true, nil
}

// table returns a sub-table; ok is false when absent.
func (d *tomlDoc) table(keys ...string) (map[string]any, bool, error) {
	v, ok := d.lookup(keys...)
	if !ok {
		return nil, false, nil
	}
	m, isMap := v.(map[string]any)
	if !isMap {
		return nil, false, configErr(d.path, displayKey(keys...), d.line(keys...),
			fmt.Errorf("want a table, got %T", v))
	}
	return m, true, nil
}
