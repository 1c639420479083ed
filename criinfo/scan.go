package criinfo

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// scanner walks JSON tokens with a depth limit and byte offsets. It never
// decodes into interfaces, so hostile nesting costs no more than its bytes.
type scanner struct {
	b      []byte
	base   int64 // offset of b in the caller's input
	dec    *json.Decoder
	depth  int
	tokens int    // tokens read, at most MaxTokens
	key    string // key reported in errors
}

func newScanner(b []byte, base int64, key string) *scanner {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber() // numbers are skipped; do not convert them to float64
	return &scanner{b: b, base: base, dec: dec, key: key}
}

// errorf returns a *ParseError at offset off (relative to s.b) wrapping
// sentinel with a message.
func (s *scanner) errorf(off int64, sentinel error, format string, args ...any) error {
	return &ParseError{Key: s.key, Offset: s.base + off, Err: fmt.Errorf("%w: "+format, append([]any{sentinel}, args...)...)}
}

// start returns the offset where the next token begins: after the decoder's
// position, skipping white space and the separators ':' and ','.
func (s *scanner) start() int64 {
	off := s.dec.InputOffset()
	for off < int64(len(s.b)) {
		switch s.b[off] {
		case ' ', '\t', '\n', '\r', ':', ',':
			off++
		default:
			return off
		}
	}
	return off
}

// next returns the next token and the offset where it starts.
func (s *scanner) next() (json.Token, int64, error) {
	off := s.start()
	tok, err := s.dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, off, s.errorf(int64(len(s.b)), ErrInvalidInfo, "unexpected end of JSON input")
		}
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, off, s.errorf(se.Offset, ErrInvalidInfo, "%v", se)
		}
		return nil, off, s.errorf(off, ErrInvalidInfo, "%v", err)
	}
	if s.tokens++; s.tokens > MaxTokens {
		return nil, off, s.errorf(off, ErrTooLarge, "more than %d JSON tokens", MaxTokens)
	}
	if d, ok := tok.(json.Delim); ok {
		switch d {
		case '{', '[':
			s.depth++
			if s.depth > MaxDepth {
				return nil, off, s.errorf(off, ErrTooDeep, "more than %d levels", MaxDepth)
			}
		default:
			s.depth--
		}
	}
	return tok, off, nil
}

// skip consumes the rest of the value that starts with tok.
func (s *scanner) skip(tok json.Token) error {
	d, ok := tok.(json.Delim)
	if !ok || (d != '{' && d != '[') {
		return nil
	}
	target := s.depth - 1
	for s.depth > target {
		if _, _, err := s.next(); err != nil {
			return err
		}
	}
	return nil
}

// end checks that nothing but white space follows the value.
func (s *scanner) end() error {
	off := s.start()
	if _, err := s.dec.Token(); !errors.Is(err, io.EOF) {
		return s.errorf(off, ErrInvalidInfo, "data after the top-level value")
	}
	return nil
}

// objectKey reads the next key of an object whose '{' was read, or reports
// that the object ended. Duplicate keys are errors.
func (s *scanner) objectKey(seen map[string]bool) (key string, more bool, err error) {
	tok, off, err := s.next()
	if err != nil {
		return "", false, err
	}
	if tok == json.Delim('}') {
		return "", false, nil
	}
	key, ok := tok.(string)
	if !ok { // the decoder only returns strings in key position
		return "", false, s.errorf(off, ErrInvalidInfo, "object key is not a string")
	}
	if seen[key] {
		return "", false, s.errorf(off, ErrInvalidInfo, "duplicate key %q", key)
	}
	seen[key] = true
	return key, true, nil
}

// scanDocument reads a `crictl info` document.
func scanDocument(b []byte, f *facts) error {
	s := newScanner(b, 0, "")
	tok, off, err := s.next()
	if err != nil {
		return err
	}
	if tok != json.Delim('{') {
		return s.errorf(off, ErrInvalidInfo, "top-level value is not a JSON object")
	}
	seen := map[string]bool{}
	for {
		key, more, err := s.objectKey(seen)
		if err != nil {
			return err
		}
		if !more {
			break
		}
		switch {
		case key == configKey:
			s.key = key
			if err := scanConfigValue(s, f); err != nil {
				return err
			}
			s.key = ""
			continue
		case isContainerdKey(key):
			f.containerd = true
		}
		s.key = key
		tok, _, err := s.next()
		if err != nil {
			return err
		}
		if err := s.skip(tok); err != nil {
			return err
		}
		s.key = ""
	}
	return s.end()
}

// scanConfigValue reads the value of "config" inside a crictl document: an
// object, or a string holding one.
func scanConfigValue(s *scanner, f *facts) error {
	tok, off, err := s.next()
	if err != nil {
		return err
	}
	switch v := tok.(type) {
	case json.Delim:
		if v != '{' {
			return s.errorf(off, ErrInvalidInfo, "config is not a JSON object")
		}
		return scanConfigObject(s, f)
	case string:
		// Offsets inside a JSON string do not map to bytes of the document
		// when the string has escapes; report the string's own offset.
		if err := scanConfigString(v, 0, f); err != nil {
			var pe *ParseError
			if errors.As(err, &pe) {
				return s.errorf(off, errors.Unwrap(pe.Err), "in the string value, offset %d: %v", pe.Offset, causeText(pe.Err))
			}
			return err
		}
		return nil
	default:
		return s.errorf(off, ErrInvalidInfo, "config is not a JSON object")
	}
}

// causeText returns the message of err without its leading sentinel.
func causeText(err error) string {
	msg := err.Error()
	if inner := errors.Unwrap(err); inner != nil {
		if p := inner.Error() + ": "; len(msg) >= len(p) && msg[:len(p)] == p {
			return msg[len(p):]
		}
	}
	return msg
}

// scanConfigString reads the value of the Info key "config".
func scanConfigString(v string, base int64, f *facts) error {
	s := newScanner([]byte(v), base, configKey)
	tok, off, err := s.next()
	if err != nil {
		return err
	}
	if tok != json.Delim('{') {
		return s.errorf(off, ErrInvalidInfo, "config is not a JSON object")
	}
	if err := scanConfigObject(s, f); err != nil {
		return err
	}
	return s.end()
}

// scanConfigObject reads the members of a config object whose '{' was read.
func scanConfigObject(s *scanner, f *facts) error {
	seen := map[string]bool{}
	for {
		key, more, err := s.objectKey(seen)
		if err != nil {
			return err
		}
		if !more {
			return nil
		}
		tok, off, err := s.next()
		if err != nil {
			return err
		}
		switch key {
		case "sandboxImage":
			img, ok := tok.(string)
			if !ok {
				return s.errorf(off, ErrInvalidInfo, "config.sandboxImage is %s, want a string", kind(tok))
			}
			if img == "" {
				return s.errorf(off, ErrInvalidInfo, "config.sandboxImage is empty")
			}
			f.sandbox, f.reported = img, true
			continue
		case "containerdEndpoint":
			// Only containerd's CRI plugin reports these. A non-string
			// value is skipped: it only serves to identify the runtime.
			if ep, ok := tok.(string); ok {
				f.endpoint = ep
				f.containerd = true
			}
		case crioKey:
			// CRI-O 1.33.0 and later nest their runtime config here
			// (server/runtime_status.go, v1.33.0 and v1.36.3; the 1.36.3
			// capture in testdata). Only an object counts.
			if tok == json.Delim('{') {
				f.crio = true
			}
		case "containerdRootDir":
			if _, ok := tok.(string); ok {
				f.containerd = true
			}
		}
		if err := s.skip(tok); err != nil {
			return err
		}
	}
}

// kind names the JSON type of a token for error messages.
func kind(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		if v == '[' {
			return "an array"
		}
		return "an object"
	case bool:
		return "a boolean"
	case json.Number, float64:
		return "a number"
	case nil:
		return "null"
	default:
		return fmt.Sprintf("%T", tok)
	}
}
