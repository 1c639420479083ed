package resolve

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"
)

// Limits on one TOML file, checked while it is read (see "Limits" in the
// package documentation). containerd's and CRI-O's own default configs
// have about a hundred tables, nesting of at most 7 key parts
// (plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options)
// and arrays two deep; a file within these limits is read in time linear in
// its size, and none can exhaust the stack.
const (
	// maxTOMLDepth bounds the brackets ('[' and '{') open at once and the
	// parts of one key path, header and dotted key together.
	maxTOMLDepth = 64
	// maxTOMLEntries bounds the tables, keys and array elements of one
	// file: room for 100,000 tables with a key each.
	maxTOMLEntries = 1 << 18
)

// tomlDoc is one decoded TOML file. Tables keep the line of each key, so
// every value read from it can be reported with its line.
type tomlDoc struct {
	path string     // node path, "/etc/containerd/config.toml"
	root *tomlTable // the document
}

// tomlTable is a table: each key's value and the line it is written on.
type tomlTable struct {
	keys map[string]tomlEntry // nil while empty
	how  tableOrigin
}

// tomlEntry is a key's value (string, int64, float64, bool, tomlDateTime,
// []any, *tomlTable or *tomlTableArray) and its line.
type tomlEntry struct {
	v    any
	line int
}

// tableOrigin says how a table came to be, which decides what TOML lets a
// later header or dotted key do with it.
type tableOrigin uint8

const (
	tableImplicit tableOrigin = iota // a parent in a [header]'s path, not yet defined
	tableHeader                      // defined by a [header] (or the document itself)
	tableDotted                      // made by a dotted key
	tableInline                      // an inline table { ... }: complete as written
	tableElement                     // an element of an array of tables
)

// tomlTableArray is an array of tables, made by [[header]]s.
type tomlTableArray struct{ tables []*tomlTable }

// tomlDateTime is a date, time or date-time value, kept as written; resolve
// reads none.
type tomlDateTime string

func newTable(how tableOrigin) *tomlTable { return &tomlTable{how: how} }

// get returns the value of key k, or false.
func (t *tomlTable) get(k string) (any, bool) {
	e, ok := t.keys[k]
	return e.v, ok
}

func (t *tomlTable) set(k string, v any, line int) {
	if t.keys == nil {
		t.keys = make(map[string]tomlEntry)
	}
	t.keys[k] = tomlEntry{v: v, line: line}
}

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

// parseTOML decodes b in one pass over go-toml's unstable parser, which
// yields each expression with the offsets of its keys: values, key lines
// and the limits come from the same walk. go-toml's own decoder takes time
// quadratic in the number of tables (3.7–5.5 s for 40,000), and its parser
// recurses once per open bracket, so the brackets are counted first
// (checkTOMLNesting) and nothing deeper than maxTOMLDepth reaches it.
//
// The TOML rules that containerd's and CRI-O's decoders enforce are
// enforced here too: a key or table defined twice, a header that names a
// value, an inline table extended afterwards, malformed numbers and dates.
// Every error is a *ConfigError with the line.
func parseTOML(path string, b []byte) (*tomlDoc, error) {
	if err := checkTOMLNesting(path, b); err != nil {
		return nil, err
	}
	d := &tomlDecoder{path: path, data: b, line: 1}
	doc := &tomlDoc{path: path, root: newTable(tableHeader)}
	cur, scope := doc.root, []string(nil) // the table the last header opened, and its key path
	var p unstable.Parser
	p.Reset(b)
	for p.NextExpression() {
		e := p.Expression()
		var err error
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			cur, scope, err = d.header(doc.root, e)
		case unstable.KeyValue:
			err = d.keyValue(cur, e, scope)
		}
		if err != nil {
			return nil, err
		}
	}
	if err := p.Error(); err != nil {
		line := 0
		var pe *unstable.ParserError
		if errors.As(err, &pe) {
			line = d.lineOf(pe.Highlight)
		}
		return nil, configErr(path, "", line, err)
	}
	return doc, nil
}

// checkTOMLNesting fails when more than maxTOMLDepth brackets are open at
// once anywhere in b. It lexes b as TOML does, so that brackets inside
// strings and comments do not count; where b is not valid TOML, the parser
// stops at or before the point where the lexing could differ from its own.
func checkTOMLNesting(path string, b []byte) error {
	depth := 0
	for i := 0; i < len(b); i++ {
		switch c := b[i]; c {
		case '#':
			for i < len(b) && b[i] != '\n' {
				i++
			}
		case '"', '\'':
			i = skipTOMLString(b, i)
		case '[', '{':
			if depth++; depth > maxTOMLDepth {
				return configErr(path, "", bytes.Count(b[:i], []byte{'\n'})+1,
					fmt.Errorf("%w: more than %d arrays, inline tables or table brackets open at once", ErrLimit, maxTOMLDepth))
			}
		case ']', '}':
			depth = max(depth-1, 0)
		}
	}
	return nil
}

// skipTOMLString returns the index of the last byte of the string that
// starts at b[i] (a quote), or of the line end where a one-line string is
// left open, or len(b)-1.
func skipTOMLString(b []byte, i int) int {
	q := b[i]
	escapes := q == '"'
	if i+2 < len(b) && b[i+1] == q && b[i+2] == q { // multi-line
		for j := i + 3; j < len(b); j++ {
			switch {
			case escapes && b[j] == '\\':
				j++
			case b[j] == q && j+2 < len(b) && b[j+1] == q && b[j+2] == q:
				// Up to two more quotes may end the content before the
				// closing three.
				j += 2
				for k := 0; k < 2 && j+1 < len(b) && b[j+1] == q; k++ {
					j++
				}
				return j
			}
		}
		return len(b) - 1
	}
	for j := i + 1; j < len(b); j++ {
		switch {
		case escapes && b[j] == '\\':
			if j+1 < len(b) && b[j+1] != '\n' {
				j++
			}
		case b[j] == q, b[j] == '\n':
			return j
		}
	}
	return len(b) - 1
}

// tomlDecoder holds what the walk of one file needs.
type tomlDecoder struct {
	path    string
	data    []byte
	entries int // tables, keys and array elements so far
	// The parser yields keys in the order of their offsets, so lines are
	// counted forward from the last key's: one pass over the file in all.
	off, line int
}

// lineAt returns the 1-based line of the byte at off.
func (d *tomlDecoder) lineAt(off int) int {
	off = min(max(off, 0), len(d.data))
	if off < d.off { // not in order: count again from the start
		d.off, d.line = 0, 1
	}
	d.line += bytes.Count(d.data[d.off:off], []byte{'\n'})
	d.off = off
	return d.line
}

// lineOf returns the line of a sub-slice of d.data, or 0.
func (d *tomlDecoder) lineOf(sub []byte) int {
	// A sub-slice shares the end of the capacity of the slice it was cut
	// from, so the difference of capacities is its offset.
	off := cap(d.data) - cap(sub)
	if sub == nil || off < 0 || off > len(d.data) {
		return 0
	}
	return d.lineAt(off)
}

// count charges one entry at line.
func (d *tomlDecoder) count(keys []string, line int) error {
	if d.entries++; d.entries > maxTOMLEntries {
		return configErr(d.path, displayKey(keys...), line,
			fmt.Errorf("%w: more than %d tables, keys and array elements", ErrLimit, maxTOMLEntries))
	}
	return nil
}

// keys returns the parts of the key of e (a header or a key/value) after
// prefix, and the line of its last part.
func (d *tomlDecoder) keys(e *unstable.Node, prefix []string) ([]string, int, error) {
	parts := append([]string(nil), prefix...)
	line := 0
	for it := e.Key(); it.Next(); {
		k := it.Node()
		parts = append(parts, string(k.Data))
		line = d.lineAt(int(k.Raw.Offset))
		if len(parts) > maxTOMLDepth {
			return nil, line, configErr(d.path, displayKey(parts[:8]...)+"...", line,
				fmt.Errorf("%w: a key path of more than %d parts", ErrLimit, maxTOMLDepth))
		}
	}
	return parts, line, nil
}

// header opens the table that a [header] or [[header]] names and returns
// it with its key path.
func (d *tomlDecoder) header(root *tomlTable, e *unstable.Node) (*tomlTable, []string, error) {
	array := e.Kind == unstable.ArrayTable
	keys, line, err := d.keys(e, nil)
	if err != nil {
		return nil, nil, err
	}
	t := root
	for i, k := range keys {
		last := i == len(keys)-1
		bad := func(format string, args ...any) error {
			return configErr(d.path, displayKey(keys[:i+1]...), line, fmt.Errorf(format, args...))
		}
		v, ok := t.get(k)
		if !ok {
			if err := d.count(keys[:i+1], line); err != nil {
				return nil, nil, err
			}
			nt := newTable(tableImplicit)
			switch {
			case last && array:
				nt.how = tableElement
				t.set(k, &tomlTableArray{tables: []*tomlTable{nt}}, line)
				return nt, keys, nil
			case last:
				nt.how = tableHeader
			}
			t.set(k, nt, line)
			t = nt
			continue
		}
		switch x := v.(type) {
		case *tomlTable:
			switch {
			case x.how == tableInline:
				return nil, nil, bad("an inline table cannot be extended by a header")
			case last && array:
				return nil, nil, bad("already a table, not an array of tables")
			case last && x.how != tableImplicit:
				return nil, nil, bad("table defined twice")
			case last:
				x.how = tableHeader
			}
			t = x
		case *tomlTableArray:
			if !last {
				t = x.tables[len(x.tables)-1]
				continue
			}
			if !array {
				return nil, nil, bad("already an array of tables, not a table")
			}
			if err := d.count(keys, line); err != nil {
				return nil, nil, err
			}
			nt := newTable(tableElement)
			x.tables = append(x.tables, nt)
			return nt, keys, nil
		default:
			return nil, nil, bad("already a value (%s), not a table", tomlType(v))
		}
	}
	return t, keys, nil
}

// keyValue sets the key of the key/value e in t. scope is the key path of
// t, for messages and the depth limit.
func (d *tomlDecoder) keyValue(t *tomlTable, e *unstable.Node, scope []string) error {
	keys, line, err := d.keys(e, scope)
	if err != nil {
		return err
	}
	for i := len(scope); i < len(keys)-1; i++ {
		k := keys[i]
		v, ok := t.get(k)
		if !ok {
			if err := d.count(keys[:i+1], line); err != nil {
				return err
			}
			nt := newTable(tableDotted)
			t.set(k, nt, line)
			t = nt
			continue
		}
		x, isTable := v.(*tomlTable)
		if !isTable || x.how == tableInline || x.how == tableHeader || x.how == tableElement {
			return configErr(d.path, displayKey(keys[:i+1]...), line,
				fmt.Errorf("a dotted key cannot add to this %s", tomlType(v)))
		}
		t = x
	}
	k := keys[len(keys)-1]
	if _, dup := t.get(k); dup {
		return configErr(d.path, displayKey(keys...), line, errors.New("key defined twice"))
	}
	if err := d.count(keys, line); err != nil {
		return err
	}
	v, err := d.value(e.Value(), keys, line)
	if err != nil {
		return err
	}
	t.set(k, v, line)
	return nil
}

// value converts a value node; keys and line are the key's, for messages.
// It recurses once per array or inline table, which checkTOMLNesting
// bounds.
func (d *tomlDecoder) value(n *unstable.Node, keys []string, line int) (any, error) {
	bad := func(err error) error { return configErr(d.path, displayKey(keys...), line, err) }
	switch n.Kind {
	case unstable.String:
		return string(n.Data), nil
	case unstable.Bool:
		return string(n.Data) == "true", nil
	case unstable.Integer:
		v, err := tomlInteger(string(n.Data))
		if err != nil {
			return nil, bad(err)
		}
		return v, nil
	case unstable.Float:
		v, err := tomlFloat(string(n.Data))
		if err != nil {
			return nil, bad(err)
		}
		return v, nil
	case unstable.LocalDate, unstable.LocalTime, unstable.LocalDateTime, unstable.DateTime:
		if err := checkTOMLDateTime(n.Kind, string(n.Data)); err != nil {
			return nil, bad(err)
		}
		return tomlDateTime(n.Data), nil
	case unstable.Array:
		size := 0
		for it := n.Children(); it.Next(); {
			size++
		}
		out := make([]any, 0, size) // one allocation: appends would copy a long array over and over
		for it := n.Children(); it.Next(); {
			if err := d.count(keys, line); err != nil {
				return nil, err
			}
			v, err := d.value(it.Node(), keys, line)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case unstable.InlineTable:
		t := newTable(tableDotted) // complete once its children are set
		for it := n.Children(); it.Next(); {
			if c := it.Node(); c.Kind == unstable.KeyValue {
				if err := d.keyValue(t, c, keys); err != nil {
					return nil, err
				}
			}
		}
		sealInline(t)
		return t, nil
	}
	return nil, bad(fmt.Errorf("unexpected %s value", n.Kind))
}

// sealInline marks t and the tables its dotted keys made as inline: no
// later header or dotted key may add to them.
func sealInline(t *tomlTable) {
	t.how = tableInline
	for _, e := range t.keys {
		if c, ok := e.v.(*tomlTable); ok && c.how == tableDotted {
			sealInline(c) // as deep as the key path, which keys bounds
		}
	}
}

// tomlType names the TOML type of a decoded value, for messages.
func tomlType(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case int64:
		return "an integer"
	case float64:
		return "a float"
	case bool:
		return "a boolean"
	case tomlDateTime:
		return "a date-time"
	case []any:
		return "an array"
	case *tomlTable:
		return "a table"
	case *tomlTableArray:
		return "an array of tables"
	}
	return fmt.Sprintf("%T", v)
}

// tomlInteger parses a TOML integer: decimal with an optional sign and no
// leading zero, or 0x, 0o, 0b digits; '_' only between two digits.
func tomlInteger(s string) (int64, error) {
	base, digits := 10, s
	if len(s) > 2 && s[0] == '0' {
		switch s[1] {
		case 'x':
			base = 16
		case 'o':
			base = 8
		case 'b':
			base = 2
		}
		if base != 10 {
			digits = s[2:]
		}
	}
	unsigned := strings.TrimLeft(digits, "+-")
	switch {
	case base != 10 && unsigned != digits:
		return 0, fmt.Errorf("integer %q: a sign before hex, octal or binary digits", s)
	case base == 10 && (len(digits)-len(unsigned) > 1 || len(unsigned) > 1 && unsigned[0] == '0'):
		return 0, fmt.Errorf("integer %q: leading zero or repeated sign", s)
	}
	clean, ok := dropUnderscores(digits, base == 16)
	if !ok {
		return 0, fmt.Errorf("integer %q: '_' must stand between two digits", s)
	}
	v, err := strconv.ParseInt(clean, base, 64)
	if err != nil {
		return 0, fmt.Errorf("integer %q: %w", s, err)
	}
	return v, nil
}

// tomlFloat parses a TOML float: [sign] int [. digits] [e [sign] digits]
// with a fraction or an exponent, or [sign] inf / nan.
func tomlFloat(s string) (float64, error) {
	switch s {
	case "inf", "+inf":
		return math.Inf(1), nil
	case "-inf":
		return math.Inf(-1), nil
	case "nan", "+nan", "-nan":
		return math.NaN(), nil
	}
	bad := fmt.Errorf("float %q is not valid TOML", s)
	clean, ok := dropUnderscores(s, false)
	if !ok {
		return 0, bad
	}
	i := 0
	if i < len(clean) && (clean[i] == '+' || clean[i] == '-') {
		i++
	}
	intStart := i
	for i < len(clean) && isDigit(clean[i]) {
		i++
	}
	if i == intStart || clean[intStart] == '0' && i-intStart > 1 {
		return 0, bad // no integer part, or a leading zero
	}
	rest := clean[i:]
	if frac, ok := strings.CutPrefix(rest, "."); ok {
		n := len(frac) - len(strings.TrimLeft(frac, "0123456789"))
		if n == 0 {
			return 0, bad
		}
		rest = frac[n:]
	}
	if rest != "" {
		exp, ok := strings.CutPrefix(strings.ToLower(rest), "e")
		exp = strings.TrimPrefix(strings.TrimPrefix(exp, "+"), "-")
		if !ok || exp == "" || strings.TrimLeft(exp, "0123456789") != "" {
			return 0, bad
		}
	}
	v, err := strconv.ParseFloat(clean, 64)
	if err != nil { // out of range too, as go-toml's decoder says
		return 0, fmt.Errorf("float %q: %w", s, err)
	}
	return v, nil
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// dropUnderscores removes the '_' of s, each of which must stand between
// two digits: hex digits when hex is set, decimal digits otherwise.
func dropUnderscores(s string, hex bool) (string, bool) {
	if !strings.Contains(s, "_") {
		return s, true
	}
	digit := func(c byte) bool { return isDigit(c) || hex && ('a' <= c && c <= 'f' || 'A' <= c && c <= 'F') }
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '_' {
			if i == 0 || i == len(s)-1 || !digit(s[i-1]) || !digit(s[i+1]) {
				return "", false
			}
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String(), true
}

// checkTOMLDateTime checks a date, time or date-time (RFC 3339 as TOML
// takes it: 'T', 't' or ' ' between date and time, any number of fraction
// digits, a leap second 60), whose shape the parser has roughly checked,
// digit by digit and for values out of range. go-toml's decoder allows
// second 60 up to v2.2 and refuses it from v2.3 on; TOML 1.0 and RFC 3339
// allow it, and so does this.
func checkTOMLDateTime(kind unstable.Kind, s string) error {
	bad := fmt.Errorf("date-time %q is not valid TOML", s)
	rest := s
	if kind != unstable.LocalTime {
		if !validDate(rest) {
			return bad
		}
		rest = rest[10:]
		if kind == unstable.LocalDate {
			if rest != "" {
				return bad
			}
			return nil
		}
		if rest == "" || rest[0] != 'T' && rest[0] != 't' && rest[0] != ' ' {
			return bad
		}
		rest = rest[1:]
	}
	rest, ok := cutClock(rest, 60)
	if !ok {
		return bad
	}
	if frac, ok := strings.CutPrefix(rest, "."); ok {
		n := len(frac) - len(strings.TrimLeft(frac, "0123456789"))
		if n == 0 {
			return bad
		}
		rest = frac[n:]
	}
	if kind != unstable.DateTime {
		if rest != "" {
			return bad
		}
		return nil
	}
	switch {
	case rest == "Z" || rest == "z":
		return nil
	case len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':':
		if h, m := twoDigits(rest[1:3]), twoDigits(rest[4:6]); h >= 0 && h <= 23 && m >= 0 && m <= 59 {
			return nil
		}
	}
	return bad
}

// validDate reports whether s starts with YYYY-MM-DD, a day that exists.
func validDate(s string) bool {
	if len(s) < 10 || s[4] != '-' || s[7] != '-' {
		return false
	}
	y1, y2, mo, d := twoDigits(s[0:2]), twoDigits(s[2:4]), twoDigits(s[5:7]), twoDigits(s[8:10])
	if y1 < 0 || y2 < 0 || mo < 1 || mo > 12 || d < 1 {
		return false
	}
	y := y1*100 + y2
	days := [13]int{0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}[mo]
	if mo == 2 && y%4 == 0 && (y%100 != 0 || y%400 == 0) {
		days = 29
	}
	return d <= days
}

// cutClock cuts HH:MM:SS from the start of s, with the second at most
// maxSecond. TOML 1.0 requires the seconds; go-toml v2.3 and later accept a
// time without them (TOML 1.1), earlier versions do not, and neither do
// containerd's and CRI-O's configs hold any time at all.
func cutClock(s string, maxSecond int) (string, bool) {
	if len(s) < 8 || s[2] != ':' || s[5] != ':' {
		return s, false
	}
	h, m, sec := twoDigits(s[0:2]), twoDigits(s[3:5]), twoDigits(s[6:8])
	if h < 0 || h > 23 || m < 0 || m > 59 || sec < 0 || sec > maxSecond {
		return s, false
	}
	return s[8:], true
}

// twoDigits returns the value of two decimal digits, or -1.
func twoDigits(s string) int {
	if len(s) != 2 || !isDigit(s[0]) || !isDigit(s[1]) {
		return -1
	}
	return int(s[0]-'0')*10 + int(s[1]-'0')
}

// table walks nested tables to keys (the last one excluded) and returns
// the table that holds the last key, or nil.
func (d *tomlDoc) parent(keys ...string) *tomlTable {
	t := d.root
	for _, k := range keys[:len(keys)-1] {
		v, _ := t.get(k)
		next, ok := v.(*tomlTable)
		if !ok {
			return nil
		}
		t = next
	}
	return t
}

// line returns the line of a key path, or 0 when it is not written in the
// file.
func (d *tomlDoc) line(keys ...string) int {
	if t := d.parent(keys...); t != nil {
		return t.keys[keys[len(keys)-1]].line
	}
	return 0
}

// lookup walks nested tables.
func (d *tomlDoc) lookup(keys ...string) (any, bool) {
	t := d.parent(keys...)
	if t == nil {
		return nil, false
	}
	return t.get(keys[len(keys)-1])
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
			fmt.Errorf("want a string, got %s", tomlType(v)))
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
			fmt.Errorf("want an array of strings, got %s", tomlType(v)))
	}
	out = make([]string, 0, len(arr))
	for i, e := range arr {
		s, isStr := e.(string)
		if !isStr {
			return nil, false, configErr(d.path, displayKey(keys...), d.line(keys...),
				fmt.Errorf("element %d: want a string, got %s", i, tomlType(e)))
		}
		out = append(out, s)
	}
	return out, true, nil
}

// table returns a sub-table; ok is false when absent.
func (d *tomlDoc) table(keys ...string) (*tomlTable, bool, error) {
	v, ok := d.lookup(keys...)
	if !ok {
		return nil, false, nil
	}
	t, isTable := v.(*tomlTable)
	if !isTable {
		return nil, false, configErr(d.path, displayKey(keys...), d.line(keys...),
			fmt.Errorf("want a table, got %s", tomlType(v)))
	}
	return t, true, nil
}
