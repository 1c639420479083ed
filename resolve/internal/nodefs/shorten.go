package nodefs

import (
	"fmt"
	"unicode/utf8"
)

// MaxMessage bounds the cause text of a ConfigError and the values quoted
// in messages. A cause may quote a
// value from the file (an import path, a version, a section header), and a
// node file can hold megabytes on one line: messages keep the start and the
// end of a longer text and say how much was left out.
const MaxMessage = 240

// Shorten returns s, or for a longer s its first and last bytes around a
// marker, cut on UTF-8 boundaries.
func Shorten(s string) string {
	if len(s) <= MaxMessage {
		return s
	}
	head, tail := MaxMessage*2/3, MaxMessage/3
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	t := len(s) - tail
	for t < len(s) && !utf8.RuneStart(s[t]) {
		t++
	}
	return fmt.Sprintf("%s…(%d bytes left out)…%s", s[:head], t-head, s[t:])
}
