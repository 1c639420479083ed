package unitfile

import (
	"errors"
	"fmt"
	"strings"
)

// ErrSyntax is wrapped by the errors of [Parse] and [Words].
var ErrSyntax = errors.New("unit file syntax error")

// maxSize bounds what Parse reads: unit files are a few KiB.
const maxSize = 1 << 20

// Entry is one key=value line of a section.
type Entry struct {
	Section, Key, Value string
	Line                int // 1-based line of the key
}

// Unit is a parsed unit file: its entries in order.
type Unit struct {
	Entries []Entry
}

// Parse reads a unit file. A line ending in a backslash goes on in the
// next line (the backslash becomes a space); lines starting with # or ;
// are comments; a key outside a section or a line without = is an error.
func Parse(data []byte) (Unit, error) {
	if len(data) > maxSize {
		return Unit{}, fmt.Errorf("%w: %d bytes, over %d", ErrSyntax, len(data), maxSize)
	}
	var (
		u       Unit
		section string
		pending strings.Builder // a continued line
		start   int
	)
	lines := strings.Split(string(data), "\n")
	for i, raw := range lines {
		line := strings.TrimSpace(strings.TrimSuffix(raw, "\r"))
		if pending.Len() == 0 {
			start = i + 1
			if line == "" || line[0] == '#' || line[0] == ';' {
				continue
			}
		} else if line != "" && (line[0] == '#' || line[0] == ';') {
			continue // comments inside a continued line are dropped
		}
		if rest, ok := strings.CutSuffix(line, `\`); ok {
			pending.WriteString(rest)
			pending.WriteByte(' ')
			continue
		}
		pending.WriteString(line)
		full := pending.String()
		pending.Reset()
		if full == "" {
			continue
		}
		if full[0] == '[' {
			if full[len(full)-1] != ']' || len(full) < 3 {
				return Unit{}, fmt.Errorf("%w: line %d: bad section header %q", ErrSyntax, start, full)
			}
			section = full[1 : len(full)-1]
			continue
		}
		key, value, ok := strings.Cut(full, "=")
		if !ok {
			return Unit{}, fmt.Errorf("%w: line %d: no '=' in %q", ErrSyntax, start, full)
		}
		if section == "" {
			return Unit{}, fmt.Errorf("%w: line %d: key %q outside a section", ErrSyntax, start, key)
		}
		u.Entries = append(u.Entries, Entry{Section: section, Key: strings.TrimSpace(key), Value: strings.TrimSpace(value), Line: start})
	}
	if pending.Len() > 0 {
		return Unit{}, fmt.Errorf("%w: line %d: continued past the end", ErrSyntax, start)
	}
	return u, nil
}

// Get returns the last value of key in section ("" when absent), as
// systemd does for single-valued settings.
func (u Unit) Get(section, key string) string {
	v := ""
	for _, e := range u.Entries {
		if e.Section == section && e.Key == key {
			v = e.Value
		}
	}
	return v
}

// All returns every value of key in section, in order.
func (u Unit) All(section, key string) []string {
	var vs []string
	for _, e := range u.Entries {
		if e.Section == section && e.Key == key {
			vs = append(vs, e.Value)
		}
	}
	return vs
}

// Words splits a command line into its words, as systemd does for
// ExecStart: whitespace separates words, double or single quotes make one
// word of what they enclose (ending at the closing quote, which must be
// followed by whitespace or the end). Prefixes (- @ : + !) stay on the
// first word.
func Words(s string) ([]string, error) {
	var words []string
	for i := 0; i < len(s); {
		switch c := s[i]; c {
		case ' ', '\t':
			i++
		case '"', '\'':
			var w strings.Builder
			j := i + 1
			for ; j < len(s) && s[j] != c; j++ {
				if s[j] == '\\' && j+1 < len(s) && strings.IndexByte(`"'\`, s[j+1]) >= 0 {
					j++
				}
				w.WriteByte(s[j])
			}
			if j >= len(s) {
				return nil, fmt.Errorf("%w: unterminated quote at offset %d of %q", ErrSyntax, i, s)
			}
			if j+1 < len(s) && s[j+1] != ' ' && s[j+1] != '\t' {
				return nil, fmt.Errorf("%w: quote at offset %d of %q not followed by a space", ErrSyntax, j, s)
			}
			words = append(words, w.String())
			i = j + 1
		default:
			j := i
			for j < len(s) && s[j] != ' ' && s[j] != '\t' {
				j++
			}
			words = append(words, s[i:j])
			i = j
		}
	}
	return words, nil
}
