package pin

import (
	"bytes"
	"encoding"
	"fmt"
)

// Mode selects how patterns are read. Its value is its word, as JSON
// writes it; the zero Mode, "", is not given: [Compile] reads it as
// [ModeStrict]. A word this version does not know decodes (see
// [Mode.UnmarshalText]) and reports [Mode.Known] false; Compile refuses
// it with an error wrapping [ErrUnknownMode].
type Mode string

const (
	// ModeStrict reads patterns as image references, canonicalized and
	// alias-aware, with anchored globs. It is the default.
	ModeStrict Mode = "strict"
	// ModeCRIOCompat reproduces what CRI-O does with its pinned_images list:
	// raw, case-insensitive strings, unanchored globs. Tools use it to
	// predict what a CRI-O node pins.
	ModeCRIOCompat Mode = "cri-o-compat"
	// ModeCRIDockerdCompat reproduces what cri-dockerd 0.4.7 and later do with
	// their --pinned-images and --pinned-image-labels flags: raw,
	// case-sensitive strings compared with Docker's familiar names, exact
	// references, bare repositories and trailing-"*" prefixes. Tools use it
	// to predict what a cri-dockerd node pins; see cridockerd.go.
	ModeCRIDockerdCompat Mode = "cri-dockerd-compat"
)

// String returns the mode's word, such as "strict"; "" for the zero Mode.
func (m Mode) String() string { return string(m) }

// Known reports whether m is one of the modes above; false for the zero
// Mode and for a word of a later version.
func (m Mode) Known() bool {
	return m == ModeStrict || m == ModeCRIOCompat || m == ModeCRIDockerdCompat
}

// MarshalText returns the mode's word, "" for the zero Mode.
func (m Mode) MarshalText() ([]byte, error) { return []byte(m), nil }

// UnmarshalText accepts "" (the zero Mode) and any word spelled as modes
// are (lowercase letters and digits joined by single dashes), known or
// not, so that a reader decodes a newer producer's JSON; the word of an
// earlier build, "crio-compat", decodes as [ModeCRIOCompat]. Other text is
// an error.
func (m *Mode) UnmarshalText(text []byte) error {
	if !isWord(text) {
		return fmt.Errorf("pin: invalid mode %q", text)
	}
	*m = Mode(respell(text))
	return nil
}

// Kind says how a rule matches; [Match.Kind] reports it.
type Kind string

// The kinds of rule. Strict mode uses Tag, Digest, ImageID, Glob and
// Keyword; CRIOCompat uses Exact, Contains and Keyword; CRIDockerdCompat
// uses Exact, Repository, Prefix, Label and Sandbox. A Kind's value is its
// word; the zero Kind, "", is no match.
const (
	KindTag        Kind = "tag"        // a reference with a tag: equal after canonicalization
	KindDigest     Kind = "digest"     // a reference with a digest: a repo digest of an equivalent repository
	KindImageID    Kind = "image-id"   // a bare digest or image ID: the image ID or any repo digest
	KindGlob       Kind = "glob"       // "prefix*": an anchored prefix of the canonical name
	KindKeyword    Kind = "keyword"    // "*text*": a case-insensitive substring
	KindExact      Kind = "exact"      // CRIOCompat: a case-insensitive whole-string match; CRIDockerdCompat: a case-sensitive one
	KindContains   Kind = "contains"   // CRIOCompat "text*": an unanchored case-insensitive match
	KindRepository Kind = "repository" // CRIDockerdCompat: a bare repository, raw, any tag or digest of it
	KindPrefix     Kind = "prefix"     // CRIDockerdCompat "text*": a raw prefix of the whole name, tag included
	KindLabel      Kind = "label"      // CRIDockerdCompat: an image label selector, "key" or "key=value"
	KindSandbox    Kind = "sandbox"    // CRIDockerdCompat: the sandbox image, equal to a repo tag
)

// String returns the kind's word, such as "tag" or "glob"; "" for the zero
// Kind.
func (k Kind) String() string { return string(k) }

// Known reports whether k is one of the kinds above; false for the zero
// Kind and for a word of a later version.
func (k Kind) Known() bool {
	switch k {
	case KindTag, KindDigest, KindImageID, KindGlob, KindKeyword, KindExact, KindContains,
		KindRepository, KindPrefix, KindLabel, KindSandbox:
		return true
	}
	return false
}

// MarshalText returns the kind's word, "" for the zero Kind (no match).
func (k Kind) MarshalText() ([]byte, error) { return []byte(k), nil }

// UnmarshalText accepts "" (the zero Kind) and any word spelled as kinds
// are (lowercase letters and digits joined by single dashes), known or
// not: the set is open, a later version may add kinds. Other text is an
// error.
func (k *Kind) UnmarshalText(text []byte) error {
	if !isWord(text) {
		return fmt.Errorf("pin: invalid kind %q", text)
	}
	*k = Kind(respell(text))
	return nil
}

// respell returns text with CRI-O spelled as every word spells it since
// v0.1.0, as its runtime word "cri-o": a word that begins "crio-", as
// ModeCRIOCompat's did before ("crio-compat"), begins "cri-o-" instead,
// so that JSON of earlier builds decodes to this version's word. A word
// that would grow past 128 bytes is kept as written.
func respell(text []byte) []byte {
	if rest, ok := bytes.CutPrefix(text, []byte("crio-")); ok && len(text) < 128 {
		return append([]byte("cri-o-"), rest...)
	}
	return text
}

// isWord reports whether text is "" or a word as modes and kinds are
// spelled: at most 128 lowercase letters and digits joined by single
// dashes. (resolve, audit and criinfo check their words the same way.)
func isWord(text []byte) bool {
	if len(text) == 0 {
		return true
	}
	if len(text) > 128 || text[0] == '-' || text[len(text)-1] == '-' {
		return false
	}
	for i, c := range text {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && (c != '-' || text[i-1] == '-') {
			return false
		}
	}
	return true
}

var (
	_ encoding.TextMarshaler   = ModeStrict
	_ encoding.TextUnmarshaler = (*Mode)(nil)
	_ encoding.TextMarshaler   = KindTag
	_ encoding.TextUnmarshaler = (*Kind)(nil)
)
