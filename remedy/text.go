package remedy

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
)

// text is a file as lines, each with its own line ending ("\n", "\r\n", or
// none on an unterminated last line), so that joining them gives back the
// file byte for byte.
type text struct {
	lines []string
	eol   string // the ending of new lines: the file's first ending, "\n" if none
}

func splitText(b []byte) *text {
	t := &text{eol: "\n"}
	if i := bytes.IndexByte(b, '\n'); i > 0 && b[i-1] == '\r' {
		t.eol = "\r\n"
	}
	s := string(b)
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			t.lines = append(t.lines, s)
			break
		}
		t.lines = append(t.lines, s[:i+1])
		s = s[i+1:]
	}
	return t
}

// body returns line n (1-based) without its ending, and its ending.
func (t *text) body(n int) (string, string) {
	l := t.lines[n-1]
	body := strings.TrimRight(l, "\r\n")
	return body, l[len(body):]
}

// hunk replaces the lines [start, start+n) (0-based) with repl, each of
// which carries its line ending.
type hunk struct {
	start, n int
	repl     []string
}

// apply returns the file with the hunks applied; they must not overlap.
func (t *text) apply(hs []hunk) ([]byte, error) {
	sorted := append([]hunk(nil), hs...)
	for i := 1; i < len(sorted); i++ {
		for j := i; j > 0 && sorted[j].start < sorted[j-1].start; j-- {
			sorted[j], sorted[j-1] = sorted[j-1], sorted[j]
		}
	}
	var b strings.Builder
	at := 0
	for _, h := range sorted {
		if h.start < at || h.start+h.n > len(t.lines) {
			return nil, fmt.Errorf("%w: two changes to one line", ErrConflict)
		}
		for _, l := range t.lines[at:h.start] {
			b.WriteString(l)
		}
		for _, l := range h.repl {
			b.WriteString(l)
		}
		at = h.start + h.n
	}
	for _, l := range t.lines[at:] {
		b.WriteString(l)
	}
	return []byte(b.String()), nil
}

// valueBounds are the bytes that may stand before and after a value in
// TOML, YAML, an environment file or a command line: a quote, "=", ":",
// a blank, a comma, a bracket, or the start or end of the line.
func boundedAt(s string, i, n int) bool {
	before := i == 0 || strings.IndexByte("\"'= :\t,[", s[i-1]) >= 0
	after := i+n == len(s) || strings.IndexByte("\"' \t,]#", s[i+n]) >= 0
	return before && after
}

// findValue returns the offset of value in line, the first bounded
// occurrence at or after from; -1 when there is none.
func findValue(line, value string, from int) int {
	for i := from; i <= len(line)-len(value); {
		j := strings.Index(line[i:], value)
		if j < 0 {
			return -1
		}
		if boundedAt(line, i+j, len(value)) {
			return i + j
		}
		i += j + 1
	}
	return -1
}

// replaceValue replaces the value old on line n with value, after flag when
// flag is given (the flag's own value, not another's), keeping the quotes,
// blanks and ending around it.
func (t *text) replaceValue(n int, flag, old, value string) (hunk, error) {
	if n < 1 || n > len(t.lines) {
		return hunk{}, fmt.Errorf("%w: line %d is not in the file (%d lines)", ErrChanged, n, len(t.lines))
	}
	body, end := t.body(n)
	from := 0
	if flag != "" {
		f := findFlag(body, flag)
		if f < 0 {
			return hunk{}, fmt.Errorf("%w: line %d has no %s", ErrChanged, n, flag)
		}
		from = f + len(flag)
	}
	i := findValue(body, old, from)
	if i < 0 {
		return hunk{}, fmt.Errorf("%w: line %d does not hold %q", ErrChanged, n, old)
	}
	return hunk{start: n - 1, n: 1, repl: []string{body[:i] + value + body[i+len(old):] + end}}, nil
}

// findFlag returns the offset of flag as a word on line (followed by "=",
// a blank, a quote or the end), -1 when it is not there.
func findFlag(line, flag string) int {
	for i := 0; i <= len(line)-len(flag); {
		j := strings.Index(line[i:], flag)
		if j < 0 {
			return -1
		}
		at := i + j
		end := at + len(flag)
		startOK := at == 0 || strings.IndexByte(" \t\"'=", line[at-1]) >= 0
		endOK := end == len(line) || strings.IndexByte("= \t\"'", line[end]) >= 0
		if startOK && endOK {
			return at
		}
		i = at + 1
	}
	return -1
}

// removeFlag removes flag and its value (value: "--flag=value" or "--flag
// value") from line n of a command line or an environment assignment, with
// the blank before it. A line of a continued command (ending in "\") left
// with nothing but the continuation is removed whole; when the removed flag
// ended the command, the continuation of the line before it is dropped.
func (t *text) removeFlag(n int, flag, value string) (hunk, error) {
	if n < 1 || n > len(t.lines) {
		return hunk{}, fmt.Errorf("%w: line %d is not in the file (%d lines)", ErrChanged, n, len(t.lines))
	}
	body, end := t.body(n)
	at := findFlag(body, flag)
	if at < 0 {
		return hunk{}, fmt.Errorf("%w: line %d has no %s", ErrChanged, n, flag)
	}
	stop := at + len(flag)
	rest := body[stop:]
	switch {
	case strings.HasPrefix(rest, "="+value):
		stop += 1 + len(value)
	case rest != "" && (rest[0] == ' ' || rest[0] == '\t') && strings.HasPrefix(strings.TrimLeft(rest, " \t"), value):
		stop += len(rest) - len(strings.TrimLeft(rest, " \t")) + len(value)
	default:
		return hunk{}, fmt.Errorf("%w: %s on line %d is not %q", ErrChanged, flag, n, value)
	}
	if stop < len(body) && strings.IndexByte(" \t\"'", body[stop]) < 0 {
		return hunk{}, fmt.Errorf("%w: %s on line %d is not %q", ErrChanged, flag, n, value)
	}
	// The blank before the flag goes with it; at the start of a value,
	// the blank after it.
	start := at
	for start > 0 && (body[start-1] == ' ' || body[start-1] == '\t') {
		start--
	}
	if start == 0 || strings.IndexByte("\"'=", body[start-1]) >= 0 {
		start = at
		for stop < len(body) && (body[stop] == ' ' || body[stop] == '\t') {
			stop++
		}
	}
	left := body[:start] + body[stop:]
	if strings.TrimSpace(left) == `\` {
		return hunk{start: n - 1, n: 1}, nil
	}
	if strings.TrimSpace(left) == "" && n > 1 {
		prev, prevEnd := t.body(n - 1)
		if p := strings.TrimRight(prev, " \t"); strings.HasSuffix(p, `\`) {
			return hunk{start: n - 2, n: 2, repl: []string{strings.TrimRight(strings.TrimSuffix(p, `\`), " \t") + prevEnd}}, nil
		}
	}
	return hunk{start: n - 1, n: 1, repl: []string{left + end}}, nil
}

// removeLine removes line n whole.
func (t *text) removeLine(n int, holds string) (hunk, error) {
	if n < 1 || n > len(t.lines) {
		return hunk{}, fmt.Errorf("%w: line %d is not in the file (%d lines)", ErrChanged, n, len(t.lines))
	}
	if body, _ := t.body(n); holds != "" && findValue(body, holds, 0) < 0 {
		return hunk{}, fmt.Errorf("%w: line %d does not hold %q", ErrChanged, n, holds)
	}
	return hunk{start: n - 1, n: 1}, nil
}

// indent is the blanks a line starts with.
func indent(s string) string { return s[:len(s)-len(strings.TrimLeft(s, " \t"))] }

// removeYAMLArg removes the kubelet argument name (value value) at line n
// of a kubeadm config's kubeletExtraArgs: the list item "- name: NAME" /
// "value: VALUE" of v1beta4, whose lines it removes whole, or the map entry
// "NAME: VALUE" of v1beta3. Comments and the other entries stay.
func (t *text) removeYAMLArg(n int, name, value string) (hunk, error) {
	if n < 1 || n > len(t.lines) {
		return hunk{}, fmt.Errorf("%w: line %d is not in the file (%d lines)", ErrChanged, n, len(t.lines))
	}
	body, _ := t.body(n)
	trim := strings.TrimSpace(body)
	if k, v, ok := strings.Cut(trim, ":"); ok && strings.Trim(strings.TrimSpace(k), `"'`) == name {
		if strings.Trim(strings.TrimSpace(stripComment(v)), `"'`) != value {
			return hunk{}, fmt.Errorf("%w: line %d does not set %s to %q", ErrChanged, n, name, value)
		}
		return hunk{start: n - 1, n: 1}, nil
	}
	// A list item: from its dash to the last line indented deeper.
	start := n
	for start > 0 {
		b, _ := t.body(start)
		if strings.HasPrefix(strings.TrimSpace(b), "- ") && (start == n || len(indent(b)) < len(indent(body))) {
			break
		}
		start--
	}
	if start == 0 {
		return hunk{}, fmt.Errorf("%w: line %d is neither %s: nor in a list item", ErrChanged, n, name)
	}
	dash, _ := t.body(start)
	stop := start
	for stop < len(t.lines) {
		b, _ := t.body(stop + 1)
		if strings.TrimSpace(b) == "" || len(indent(b)) <= len(indent(dash)) {
			break
		}
		stop++
	}
	got := map[string]string{}
	for i := start; i <= stop; i++ {
		b, _ := t.body(i)
		k, v, _ := strings.Cut(strings.TrimPrefix(strings.TrimSpace(b), "- "), ":")
		got[strings.TrimSpace(k)] = strings.Trim(strings.TrimSpace(stripComment(v)), `"'`)
	}
	if len(got) != 2 || got["name"] != name || got["value"] != value {
		return hunk{}, fmt.Errorf("%w: the list item at line %d is not name %s, value %q", ErrChanged, start, name, value)
	}
	return hunk{start: start - 1, n: stop - start + 1}, nil
}

// stripComment drops a YAML or TOML comment after a value, which may be
// quoted.
func stripComment(v string) string {
	t := strings.TrimSpace(v)
	if t != "" && (t[0] == '"' || t[0] == '\'') {
		if end := strings.IndexByte(t[1:], t[0]); end >= 0 {
			return t[:end+2]
		}
		return t
	}
	if i := strings.Index(t, " #"); i >= 0 {
		return t[:i]
	}
	return t
}

// tomlHeader returns the keys of a TOML table header line ("[a.'b'.c]" →
// a, b, c), false when the line is no table header (an array of tables
// included).
func tomlHeader(line string) ([]string, bool) {
	s := strings.TrimSpace(line)
	if !strings.HasPrefix(s, "[") || strings.HasPrefix(s, "[[") {
		return nil, false
	}
	keys, rest, ok := tomlKeys(s[1:], ']')
	if !ok {
		return nil, false
	}
	if r := strings.TrimSpace(rest); r != "" && !strings.HasPrefix(r, "#") {
		return nil, false
	}
	return keys, true
}

// tomlKeys reads a dotted key up to the byte stop, and returns its parts
// and what follows stop.
func tomlKeys(s string, stop byte) ([]string, string, bool) {
	var keys []string
	for {
		s = strings.TrimLeft(s, " \t")
		var k string
		switch {
		case s == "":
			return nil, "", false
		case s[0] == '"' || s[0] == '\'':
			end := strings.IndexByte(s[1:], s[0])
			if end < 0 || (s[0] == '"' && strings.Contains(s[1:end+1], `\`)) {
				return nil, "", false
			}
			k, s = s[1:end+1], s[end+2:]
		default:
			end := 0
			for end < len(s) && (s[end] == '-' || s[end] == '_' || 'a' <= s[end]|0x20 && s[end]|0x20 <= 'z' || '0' <= s[end] && s[end] <= '9') {
				end++
			}
			if end == 0 {
				return nil, "", false
			}
			k, s = s[:end], s[end:]
		}
		keys = append(keys, k)
		s = strings.TrimLeft(s, " \t")
		switch {
		case strings.HasPrefix(s, "."):
			s = s[1:]
		case s != "" && s[0] == stop:
			return keys, s[1:], true
		default:
			return nil, "", false
		}
	}
}

func equalKeys(a, b []string) bool { return slices.Equal(a, b) }

// tomlQuote quotes a value (an image reference: no quote, no backslash, no
// control byte) in the quote the file uses for its table names.
func tomlQuote(v string, single bool) string {
	if single {
		return "'" + v + "'"
	}
	return `"` + v + `"`
}

// setTOML sets key in table to the string value: in place where the table
// sets it, else as a new line after the table's last key, else in a new
// table at the end of the file.
func (t *text) setTOML(table []string, key, value string) (hunk, error) {
	if strings.ContainsAny(value, "\"'\\\n\r") {
		return hunk{}, fmt.Errorf("%w: %q cannot be written as a TOML string here", ErrUnsupported, value)
	}
	single := false
	in, last := false, -1
	for i := range t.lines {
		b, _ := t.body(i + 1)
		if keys, ok := tomlHeader(b); ok {
			if in {
				break
			}
			if in = equalKeys(keys, table); in {
				single = strings.Contains(b, "'")
				last = i
			}
			continue
		}
		if strings.HasPrefix(strings.TrimSpace(b), "[") {
			if in {
				break
			}
			continue
		}
		if !in {
			continue
		}
		tb := strings.TrimSpace(b)
		if tb == "" || strings.HasPrefix(tb, "#") {
			continue
		}
		last = i
		if keys, rest, ok := tomlKeys(tb, '='); ok && equalKeys(keys, []string{key}) {
			v := strings.TrimSpace(stripComment(rest))
			if len(v) < 2 || (v[0] != '"' && v[0] != '\'') || v[len(v)-1] != v[0] || strings.ContainsRune(v[1:len(v)-1], rune(v[0])) || strings.HasPrefix(v, `""`) || strings.HasPrefix(v, "''") {
				return hunk{}, fmt.Errorf("%w: line %d: %s is not a one-line string", ErrUnsupported, i+1, key)
			}
			return t.replaceValue(i+1, "", v[1:len(v)-1], value)
		}
	}
	if last >= 0 {
		b, end := t.body(last + 1)
		ind := indent(b)
		if _, ok := tomlHeader(b); ok {
			ind += "  "
		}
		line := ind + key + " = " + tomlQuote(value, single) + t.eol
		if end == "" { // the last line, unterminated
			return hunk{start: last, n: 1, repl: []string{t.lines[last] + t.eol, strings.TrimSuffix(line, t.eol)}}, nil
		}
		return hunk{start: last + 1, repl: []string{line}}, nil
	}
	var hdr []string
	for _, k := range table {
		if strings.Trim(k, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != "" {
			k = `"` + k + `"`
		}
		hdr = append(hdr, k)
	}
	add := []string{"[" + strings.Join(hdr, ".") + "]" + t.eol, "  " + key + " = " + tomlQuote(value, false) + t.eol}
	n := len(t.lines)
	if n == 0 {
		return hunk{repl: add}, nil
	}
	if last := t.lines[n-1]; !strings.HasSuffix(last, "\n") {
		return hunk{start: n - 1, n: 1, repl: append([]string{last + t.eol, t.eol}, add...)}, nil
	}
	return hunk{start: n, repl: append([]string{t.eol}, add...)}, nil
}
