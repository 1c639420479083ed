package resolve

import (
	"bytes"
	"errors"
	"iter"
	"strings"
)

// Lexing shared by the systemd unit reader (cri-dockerd) and the
// EnvironmentFile reader (kubelet): logical lines joined at a trailing
// backslash, and command lines split into words.

// logicalLine is one line after joining continuations.
type logicalLine struct {
	text string
	line int   // 1-based line of its first physical line
	offs []int // offs[i] is where physical line line+i starts in text
}

// lineAt returns the physical line that holds text[off].
func (l logicalLine) lineAt(off int) int {
	n := 0
	for i, o := range l.offs {
		if o <= off {
			n = i
		}
	}
	return l.line + n
}

// logicalLines yields the lines of b, joining a line that ends in a
// backslash with the next one (the backslash becomes a space, as systemd
// does). Comment lines (# or ;) inside a continuation are skipped, as
// systemd does. It holds one logical line at a time: a file of a million
// lines costs no list of them.
func logicalLines(b []byte) iter.Seq[logicalLine] {
	return func(yield func(logicalLine) bool) {
		var cur logicalLine
		open := false // cur has started
		var sb strings.Builder
		rest := b
		for i := 0; ; i++ {
			var raw []byte
			j := bytes.IndexByte(rest, '\n')
			last := j < 0
			if last {
				raw = rest
			} else {
				raw, rest = rest[:j], rest[j+1:]
			}
			raw = bytes.TrimSuffix(raw, []byte{'\r'})
			skip := false
			if open {
				t := bytes.TrimSpace(raw)
				skip = len(t) > 0 && (t[0] == '#' || t[0] == ';')
			}
			if !skip {
				if !open {
					cur, open = logicalLine{line: i + 1}, true
					sb.Reset()
				}
				cur.offs = append(cur.offs, sb.Len())
				cont := bytes.HasSuffix(raw, []byte{'\\'}) && !bytes.HasSuffix(raw, []byte{'\\', '\\'})
				if cont {
					sb.Write(raw[:len(raw)-1])
					sb.WriteByte(' ')
				} else {
					sb.Write(raw)
				}
				cur.text = sb.String()
				if !cont {
					open = false
					if !yield(cur) {
						return
					}
				}
			}
			if last {
				break
			}
		}
		if open {
			yield(cur) // a continuation at the end of the file
		}
	}
}

// word is one word of a command line and where it starts.
type word struct {
	s   string
	off int // offset in the logical line text
}

var errUnterminatedQuote = errors.New("unterminated quote")

// splitWords splits a command line as systemd splits ExecStart: words
// separated by whitespace, double and single quotes group, a backslash
// escapes the next character (\n, \t become newline and tab). base is the
// offset of s in its logical line. It returns the offset of an unterminated
// quote with errUnterminatedQuote, and that of the first word past
// maxCommandWords with errTooManyWords.
func splitWords(s string, base int) ([]word, int, error) {
	return scanWords(s, base, true)
}

// scanWords is splitWords, and with split false the unquoting alone:
// whitespace outside quotes is kept and s is one word (none when empty).
func scanWords(s string, base int, split bool) ([]word, int, error) {
	var out []word
	var sb strings.Builder
	in := false
	start := 0
	var quote byte
	quoteAt := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote == '\'':
			sb.WriteByte(c)
		case c == '\\' && i+1 < len(s):
			i++
			if !in {
				in, start = true, i-1
			}
			switch s[i] {
			case 'n':
				sb.WriteByte('\n')
			case 't':
				sb.WriteByte('\t')
			default:
				sb.WriteByte(s[i])
			}
		case quote == 0 && (c == '"' || c == '\''):
			quote, quoteAt = c, i
			if !in {
				in, start = true, i
			}
		case split && quote == 0 && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			if in {
				if len(out) == maxCommandWords {
					return nil, base + start, errTooManyWords
				}
				out = append(out, word{s: sb.String(), off: base + start})
				sb.Reset()
				in = false
			}
		default:
			if !in {
				in, start = true, i
			}
			sb.WriteByte(c)
		}
	}
	if quote != 0 {
		return nil, base + quoteAt, errUnterminatedQuote
	}
	if in {
		if len(out) == maxCommandWords {
			return nil, base + start, errTooManyWords
		}
		out = append(out, word{s: sb.String(), off: base + start})
	}
	return out, 0, nil
}

// flagValue returns the value of the last --name=value or --name value in
// args, and the index of the word holding the value.
func flagValue(args []word, name string) (string, int, bool) {
	val, at, ok := "", 0, false
	long := "--" + name
	for i := 0; i < len(args); i++ {
		a := args[i].s
		switch {
		case a == "--":
			return val, at, ok // end of flags
		case strings.HasPrefix(a, long+"="):
			val, at, ok = a[len(long)+1:], i, true
		case a == long && i+1 < len(args):
			val, at, ok = args[i+1].s, i+1, true
			i++
		}
	}
	return val, at, ok
}
