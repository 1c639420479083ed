package pin

import (
	"unicode"
	"unicode/utf8"
)

// crioRule is a ModeCRIOCompat pattern: CRI-O compiles each to a regexp with
// (?i), a whole-string one for exact patterns and an unanchored one
// otherwise. Matching here gives the same answers without regexps.
type crioRule struct {
	text  string // the literal text, "*"s stripped
	ascii bool   // text is ASCII
	exact bool   // whole-string match, else substring
	rule  int
}

func (m *Matcher) findCRIO(s string) int {
	for _, c := range m.crio {
		if c.matches(s) {
			return c.rule
		}
	}
	return noRule
}

func (c crioRule) matches(s string) bool {
	if c.exact {
		return c.text == s || equalFoldPrefix(s, c.text) == len(s)
	}
	if c.text == "" {
		return true
	}
	for i := 0; i < len(s); {
		if equalFoldPrefix(s[i:], c.text) >= 0 {
			return true
		}
		if s[i] < utf8.RuneSelf {
			i++
		} else {
			_, n := utf8.DecodeRuneInString(s[i:])
			i += n
		}
	}
	return false
}

// equalFoldPrefix reports how many bytes of s match all of p under Unicode
// simple case folding, the folding of regexp's (?i), or -1 when p is not a
// prefix of s. Invalid UTF-8 decodes to U+FFFD on both sides, as in regexp.
func equalFoldPrefix(s, p string) int {
	i, j := 0, 0
	for j < len(p) {
		if i >= len(s) {
			return -1
		}
		sr, sn := rune(s[i]), 1
		if sr >= utf8.RuneSelf {
			sr, sn = utf8.DecodeRuneInString(s[i:])
		}
		pr, pn := rune(p[j]), 1
		if pr >= utf8.RuneSelf {
			pr, pn = utf8.DecodeRuneInString(p[j:])
		}
		if sr != pr && !foldEqual(sr, pr) {
			return -1
		}
		i += sn
		j += pn
	}
	return i
}

// foldEqual reports whether a and b are in the same simple-folding orbit.
func foldEqual(a, b rune) bool {
	if a < utf8.RuneSelf && b < utf8.RuneSelf {
		return a|0x20 == b|0x20 && 'a' <= a|0x20 && a|0x20 <= 'z'
	}
	for r := unicode.SimpleFold(a); r != a; r = unicode.SimpleFold(r) {
		if r == b {
			return true
		}
	}
	return false
}
