package remedy

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
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

// inFile returns an error wrapping [ErrChanged] when line n is not in the
// file: a file shorter than the line the node was resolved at has changed
// since.
func (t *text) inFile(n int) error {
	if n < 1 || n > len(t.lines) {
		return fmt.Errorf("%w: line %d is not in the file (%d lines)", ErrChanged, n, len(t.lines))
	}
	return nil
}

// continued reports whether line n ends in a backslash, which continues it
// on the next line (systemd's unit and environment files).
func (t *text) continued(n int) bool {
	b, _ := t.body(n)
	return strings.HasSuffix(strings.TrimRight(b, " \t"), `\`)
}

// logical returns the first and last line of the logical line that line n
// is part of: the lines before it that continue onto it, and those it
// continues onto.
func (t *text) logical(n int) (int, int) {
	first, last := n, n
	for first > 1 && t.continued(first-1) {
		first--
	}
	for last < len(t.lines) && t.continued(last) {
		last++
	}
	return first, last
}

// narrow drops from h the lines at its ends that it leaves as they are.
func (t *text) narrow(h hunk) hunk {
	for h.n > 0 && len(h.repl) > 0 && h.repl[0] == t.lines[h.start] {
		h.start, h.n, h.repl = h.start+1, h.n-1, h.repl[1:]
	}
	for h.n > 0 && len(h.repl) > 0 && h.repl[len(h.repl)-1] == t.lines[h.start+h.n-1] {
		h.n, h.repl = h.n-1, h.repl[:len(h.repl)-1]
	}
	return h
}

// replaceValue replaces the value old on line n with value, keeping the
// quotes, blanks and ending around it. With flag, it replaces the flag's
// own value (not another's) wherever the flag stands with old on the
// logical line n is part of (a command continued over lines). An error
// wraps [ErrUnsupported] when the line does not hold old as written (an
// escaped or multi-line string): the resolver, which reads the file with
// its owner's decoder, found it there.
func (t *text) replaceValue(n int, flag, old, value string) (hunk, error) {
	if err := t.inFile(n); err != nil {
		return hunk{}, err
	}
	if flag == "" {
		body, end := t.body(n)
		i := findValue(body, old, 0)
		if i < 0 {
			return hunk{}, fmt.Errorf("%w: line %d does not hold %q as written", ErrUnsupported, n, old)
		}
		return hunk{start: n - 1, n: 1, repl: []string{body[:i] + value + body[i+len(old):] + end}}, nil
	}
	first, last := t.logical(n)
	h, found := hunk{start: first - 1, n: last - first + 1}, false
	for i := first; i <= last; i++ {
		body, end := t.body(i)
		for from := 0; ; {
			f := findFlag(body[from:], flag)
			if f < 0 {
				break
			}
			f += from + len(flag)
			from = f
			// The flag's value: a word, or an item of its comma-separated list.
			v := f + len(body[f:]) - len(strings.TrimLeft(body[f:], "= \t\"'"))
			w := v + strings.IndexAny(body[v:]+" ", " \t\"'")
			if j := findValue(body[:w], old, v); j >= 0 {
				body, found = body[:j]+value+body[j+len(old):], true
			}
		}
		h.repl = append(h.repl, body+end)
	}
	if !found {
		return hunk{}, fmt.Errorf("%w: line %d has no %s %q as written", ErrUnsupported, n, flag, old)
	}
	return t.narrow(h), nil
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
		startOK := at == 0 || strings.IndexByte(" \t\"'=\\", line[at-1]) >= 0
		// A backslash after the flag (a continuation, an escape) ends
		// the flag's word as far as this reader goes: the caller refuses
		// the shape rather than leave a flag in place.
		endOK := end == len(line) || strings.IndexByte("= \t\"'\\", line[end]) >= 0
		if startOK && endOK {
			return at
		}
		i = at + 1
	}
	return -1
}

// removeFlag removes flag and its value ("--flag=V" or "--flag V"), every
// time it stands, with the blank before it, from the command line or
// environment assignment that line n is part of, its continuation lines
// included: a later one would take over from a removed one. One of them
// must have the value value. A continuation line left with nothing but
// its backslash is removed whole; when the removed flag ended the command,
// the backslash of the line before is dropped. An error wraps
// [ErrUnsupported] when no flag has the value as written, or a value is
// not on the flag's line.
func (t *text) removeFlag(n int, flag, value string) (hunk, error) {
	if err := t.inFile(n); err != nil {
		return hunk{}, err
	}
	first, last := t.logical(n)
	h, seen, found := hunk{start: first - 1, n: last - first + 1}, false, false
	for i := first; i <= last; i++ {
		body, end := t.body(i)
		left, s, f, err := cutFlag(body, flag, value)
		if err != nil {
			return hunk{}, fmt.Errorf("%w: line %d: %w", ErrUnsupported, i, err)
		}
		seen, found = seen || s, found || f
		switch {
		case !s:
			h.repl = append(h.repl, body+end)
		case strings.Trim(left, " \t") == `\`:
			// A continuation line that held only the flag.
		case strings.Trim(left, " \t") == "" && len(h.repl) > 0:
			// The end of the command: the line before ends it now.
			prev := h.repl[len(h.repl)-1]
			pb := strings.TrimRight(prev, "\r\n")
			h.repl[len(h.repl)-1] = strings.TrimRight(strings.TrimSuffix(strings.TrimRight(pb, " \t"), `\`), " \t") + prev[len(pb):]
		default:
			h.repl = append(h.repl, left+end)
		}
	}
	switch {
	case !seen:
		return hunk{}, fmt.Errorf("%w: line %d has no %s", ErrUnsupported, n, flag)
	case !found:
		return hunk{}, fmt.Errorf("%w: %s on line %d is not %q as written", ErrUnsupported, flag, n, value)
	}
	return t.narrow(h), nil
}

// cutFlag removes every flag and its value from one line, and reports
// whether there was one, and one with the value value.
func cutFlag(body, flag, value string) (string, bool, bool, error) {
	seen, found := false, false
	for from := 0; ; {
		at := findFlag(body[from:], flag)
		if at < 0 {
			return body, seen, found, nil
		}
		at += from
		if at > 0 && body[at-1] == '\\' {
			return "", false, false, fmt.Errorf("%s follows a backslash", flag)
		}
		stop := at + len(flag)
		if stop < len(body) && (body[stop] == ' ' || body[stop] == '\t') {
			stop += len(body[stop:]) - len(strings.TrimLeft(body[stop:], " \t"))
		} else if stop < len(body) && body[stop] == '=' {
			stop++
		} else {
			return "", false, false, fmt.Errorf("%s has no value on its line", flag)
		}
		v := stop
		for stop < len(body) && strings.IndexByte(" \t\"'", body[stop]) < 0 {
			stop++
		}
		if stop == len(body) && stop > v && body[stop-1] == '\\' {
			stop-- // the continuation after the value
		}
		if stop == v {
			return "", false, false, fmt.Errorf("%s has no value on its line", flag)
		}
		if strings.IndexByte(body[v:stop], '\\') >= 0 {
			return "", false, false, fmt.Errorf("%s has an escape in its value", flag)
		}
		seen, found = true, found || body[v:stop] == value
		// The blank before the flag goes with it; at the start of a
		// value, the blank after it.
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
		body, from = body[:start]+body[stop:], start
	}
}

// removeLine removes line n whole.
func (t *text) removeLine(n int, holds string) (hunk, error) {
	if err := t.inFile(n); err != nil {
		return hunk{}, err
	}
	if body, _ := t.body(n); holds != "" && findValue(body, holds, 0) < 0 {
		return hunk{}, fmt.Errorf("%w: line %d does not hold %q as written", ErrUnsupported, n, holds)
	}
	return hunk{start: n - 1, n: 1}, nil
}

// indent is the blanks a line starts with.
func indent(s string) string { return s[:len(s)-len(strings.TrimLeft(s, " \t"))] }

// removeYAMLArg removes the kubelet argument name (value value) at line n
// of a kubeadm config's kubeletExtraArgs: the list item "- name: NAME" /
// "value: VALUE" of v1beta4, whose lines it removes whole, or the map entry
// "NAME: VALUE" of v1beta3, or an item "- {name: NAME, value: VALUE}" on
// one line. Comments and the other entries stay. An error
// wraps [ErrUnsupported] for what it cannot remove line by line: a flow
// map or sequence, an anchor or alias, a block or otherwise escaped value.
func (t *text) removeYAMLArg(n int, name, value string) (hunk, error) {
	if err := t.inFile(n); err != nil {
		return hunk{}, err
	}
	body, _ := t.body(n)
	trim := strings.TrimSpace(body)
	if k, v, ok := strings.Cut(trim, ":"); ok && strings.Trim(strings.TrimSpace(k), `"'`) == name {
		if strings.Trim(strings.TrimSpace(stripComment(v)), `"'`) != value {
			return hunk{}, fmt.Errorf("%w: line %d does not set %s to %q", ErrUnsupported, n, name, value)
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
		return hunk{}, fmt.Errorf("%w: line %d is neither %s: nor in a list item", ErrUnsupported, n, name)
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
	if item := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(dash), "-")); stop == start && strings.HasPrefix(item, "{") {
		// A flow map on the item's line, "- {name: NAME, value: VALUE}":
		// read as kubeadm reads it (sigs.k8s.io/yaml), and removed only
		// when it holds nothing else, no anchor or alias included.
		var m map[string]string
		if strings.ContainsAny(item, "&*") || yaml.Unmarshal([]byte(item), &m) != nil || len(m) != 2 || m["name"] != name || m["value"] != value {
			return hunk{}, fmt.Errorf("%w: the list item at line %d is not name %s, value %q as written", ErrUnsupported, start, name, value)
		}
		return hunk{start: start - 1, n: 1}, nil
	}
	got := map[string]string{}
	for i := start; i <= stop; i++ {
		b, _ := t.body(i)
		k, v, _ := strings.Cut(strings.TrimPrefix(strings.TrimSpace(b), "- "), ":")
		got[strings.TrimSpace(k)] = strings.Trim(strings.TrimSpace(stripComment(v)), `"'`)
	}
	if len(got) != 2 || got["name"] != name || got["value"] != value {
		return hunk{}, fmt.Errorf("%w: the list item at line %d is not name %s, value %q", ErrUnsupported, start, name, value)
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
