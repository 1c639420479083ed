package unitfile

import (
	"bytes"
	"errors"
	"fmt"
	"iter"
	"strings"
)

// ErrSyntax is wrapped by the errors of [Parse], [Entries], [Split] and
// [Words]; ErrTooManyWords by those of [Split] past its limit.
var (
	ErrSyntax       = errors.New("unit file syntax error")
	ErrTooManyWords = errors.New("too many words")
)

// Line is one logical line of a unit file: its physical lines with their
// continuations joined.
type Line struct {
	Text   string
	Number int    // 1-based line of its first physical line
	parts  []part // the physical lines in Text, comments left out
}

// part is a physical line of a Line: where it starts in Text, and its number.
type part struct{ off, number int }

// LineAt returns the physical line that holds Text[off].
func (l Line) LineAt(off int) int {
	n := l.Number
	for _, p := range l.parts {
		if p.off <= off {
			n = p.number
		}
	}
	return n
}

// isComment reports whether raw is a comment line: # or ; after blanks.
func isComment(raw []byte) bool {
	t := bytes.TrimLeft(raw, " \t\n\r")
	return len(t) > 0 && (t[0] == '#' || t[0] == ';')
}

// Lines yields the logical lines of data, comments left out. It holds one
// logical line at a time.
func Lines(data []byte) iter.Seq[Line] {
	return func(yield func(Line) bool) {
		var cur Line
		open := false // a continuation is under way
		var sb strings.Builder
		rest := data
		for n := 1; len(rest) > 0 || open; n++ {
			raw, tail, found := bytes.Cut(rest, []byte{'\n'})
			rest = tail
			raw = bytes.TrimSuffix(raw, []byte{'\r'})
			if isComment(raw) {
				if !found {
					break
				}
				continue
			}
			if !open {
				cur, open = Line{Number: n}, true
				sb.Reset()
			}
			cur.parts = append(cur.parts, part{off: sb.Len(), number: n})
			trail := len(raw) - len(bytes.TrimRight(raw, `\`))
			cont := trail%2 == 1
			if cont {
				sb.Write(raw[:len(raw)-1])
				sb.WriteByte(' ')
			} else {
				sb.Write(raw)
			}
			if !cont || !found {
				cur.Text, open = sb.String(), false
				if !yield(cur) {
					return
				}
			}
			if !found {
				return
			}
		}
		if open { // a continuation ended by a comment at the end of the file
			cur.Text = sb.String()
			yield(cur)
		}
	}
}

// Entry is one assignment of a section.
type Entry struct {
	Section, Key, Value string
	Line                int // 1-based line of the key

	line    Line // the logical line, for LineAt
	valueAt int  // offset of Value in line.Text
}

// LineAt returns the physical line that holds Value[off].
func (e Entry) LineAt(off int) int { return e.line.LineAt(e.valueAt + off) }

// Entries yields the assignments of data in order. After an error (a bad
// section header, with its Line) it yields nothing more.
func Entries(data []byte) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		section := ""
		for l := range Lines(data) {
			t := strings.TrimSpace(l.Text)
			if t == "" {
				continue
			}
			if t[0] == '[' {
				if t[len(t)-1] != ']' {
					yield(Entry{Line: l.Number}, fmt.Errorf("%w: line %d: bad section header %q", ErrSyntax, l.Number, t))
					return
				}
				section = t[1 : len(t)-1]
				continue
			}
			eq := strings.IndexByte(l.Text, '=')
			key := strings.TrimSpace(l.Text[:max(eq, 0)])
			if section == "" || key == "" {
				continue
			}
			raw := l.Text[eq+1:]
			at := eq + 1 + len(raw) - len(strings.TrimLeft(raw, " \t\n\r"))
			e := Entry{Section: section, Key: key, Value: strings.TrimSpace(raw), Line: l.Number, line: l, valueAt: at}
			if !yield(e, nil) {
				return
			}
		}
	}
}

// Unit is a parsed unit file: its assignments in order.
type Unit struct {
	Entries []Entry
}

// Parse reads a whole unit file; see [Entries].
func Parse(data []byte) (Unit, error) {
	var u Unit
	for e, err := range Entries(data) {
		if err != nil {
			return Unit{}, err
		}
		u.Entries = append(u.Entries, e)
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
