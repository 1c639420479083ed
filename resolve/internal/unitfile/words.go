package unitfile

import (
	"fmt"
	"strings"
)

// Word is one word of a command line and the offset where it starts.
type Word struct {
	Text string
	Off  int
}

// WordError is the error of [Split]: what went wrong and where.
type WordError struct {
	Off int   // offset in the command line
	Err error // wraps ErrSyntax or ErrTooManyWords
}

func (e *WordError) Error() string { return fmt.Sprintf("offset %d: %v", e.Off, e.Err) }

func (e *WordError) Unwrap() error { return e.Err }

// unescape reads the one-letter escapes of systemd's cunescape_one
// (src/basic/escape.c); ok is false for any other.
func unescape(c byte) (byte, bool) {
	i := strings.IndexByte(`abfnrtv\"'s`, c)
	if i < 0 {
		return 0, false
	}
	return "\a\b\f\n\r\t\v\\\"' "[i], true
}

// Split splits a command line into words as systemd splits ExecStart (see
// the package documentation). With limit > 0, a word past the limit is an
// error wrapping ErrTooManyWords at its offset; an unterminated quote is
// one wrapping ErrSyntax at the quote.
func Split(s string, limit int) ([]Word, error) {
	var out []Word
	var sb strings.Builder
	in, start := false, 0
	var quote byte
	quoteAt := 0
	flush := func() error {
		if limit > 0 && len(out) == limit {
			return &WordError{Off: start, Err: fmt.Errorf("%w: more than %d words", ErrTooManyWords, limit)}
		}
		out = append(out, Word{Text: sb.String(), Off: start})
		sb.Reset()
		in = false
		return nil
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !in && (quote != 0 || !isSpace(c)) {
			in, start = true, i
		}
		switch {
		case c == '\\':
			if i+1 == len(s) {
				sb.WriteByte(c) // kept, as systemd keeps a trailing one
				continue
			}
			i++
			if e, ok := unescape(s[i]); ok {
				sb.WriteByte(e)
			} else {
				sb.WriteByte(c)
				sb.WriteByte(s[i])
			}
		case quote != 0:
			if c == quote {
				quote = 0
			} else {
				sb.WriteByte(c)
			}
		case c == '"' || c == '\'':
			quote, quoteAt = c, i
		case isSpace(c):
			if in {
				if err := flush(); err != nil {
					return nil, err
				}
			}
		default:
			sb.WriteByte(c)
		}
	}
	if quote != 0 {
		return nil, &WordError{Off: quoteAt, Err: fmt.Errorf("%w: unterminated %c quote", ErrSyntax, quote)}
	}
	if in {
		if err := flush(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// Words is [Split] without a limit, giving the words alone.
func Words(s string) ([]string, error) {
	ws, err := Split(s, 0)
	if err != nil {
		return nil, fmt.Errorf("%q: %w", s, err)
	}
	var out []string
	for _, w := range ws {
		out = append(out, w.Text)
	}
	return out, nil
}
