package pin

import (
	"encoding"
	"fmt"
)

// Mode selects how patterns are read.
type Mode uint8

const (
	// ModeStrict reads patterns as image references, canonicalized and
	// alias-aware, with anchored globs. It is the default.
	ModeStrict Mode = iota
	// ModeCRIOCompat reproduces what CRI-O does with its pinned_images list:
	// raw, case-insensitive strings, unanchored globs. Tools use it to
	// predict what a CRI-O node pins.
	ModeCRIOCompat
	// ModeCRIDockerdCompat reproduces what cri-dockerd 0.4.7 and later do with
	// their --pinned-images and --pinned-image-labels flags: raw,
	// case-sensitive strings compared with Docker's familiar names, exact
	// references, bare repositories and trailing-"*" prefixes. Tools use it
	// to predict what a cri-dockerd node pins; see cridockerd.go.
	ModeCRIDockerdCompat
)

var (
	_ encoding.TextMarshaler   = ModeStrict
	_ encoding.TextUnmarshaler = (*Mode)(nil)
)

// String returns "strict", "crio-compat" or "cri-dockerd-compat".
func (m Mode) String() string {
	switch m {
	case ModeStrict:
		return "strict"
	case ModeCRIOCompat:
		return "crio-compat"
	case ModeCRIDockerdCompat:
		return "cri-dockerd-compat"
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

// MarshalText returns the name that String returns.
func (m Mode) MarshalText() ([]byte, error) {
	if m > ModeCRIDockerdCompat {
		return nil, fmt.Errorf("pin: unknown mode %d", uint8(m))
	}
	return []byte(m.String()), nil
}

// UnmarshalText accepts "strict", "crio-compat" and "cri-dockerd-compat".
func (m *Mode) UnmarshalText(text []byte) error {
	switch string(text) {
	case "strict":
		*m = ModeStrict
	case "crio-compat":
		*m = ModeCRIOCompat
	case "cri-dockerd-compat":
		*m = ModeCRIDockerdCompat
	default:
		return fmt.Errorf("pin: unknown mode %q, want strict, crio-compat or cri-dockerd-compat", text)
	}
	return nil
}

// Kind says how a rule matches; [Match.Kind] reports it.
type Kind uint8

// The kinds of rule. Strict mode uses Tag, Digest, ImageID, Glob and
// Keyword; CRIOCompat uses Exact, Contains and Keyword; CRIDockerdCompat
// uses Exact, Repository, Prefix, Label and Sandbox.
const (
	KindTag        Kind = iota + 1 // a reference with a tag: equal after canonicalization
	KindDigest                     // a reference with a digest: a repo digest of an equivalent repository
	KindImageID                    // a bare digest or image ID: the image ID or any repo digest
	KindGlob                       // "prefix*": an anchored prefix of the canonical name
	KindKeyword                    // "*text*": a case-insensitive substring
	KindExact                      // CRIOCompat: a case-insensitive whole-string match; CRIDockerdCompat: a case-sensitive one
	KindContains                   // CRIOCompat "text*": an unanchored case-insensitive match
	KindRepository                 // CRIDockerdCompat: a bare repository, raw, any tag or digest of it
	KindPrefix                     // CRIDockerdCompat "text*": a raw prefix of the whole name, tag included
	KindLabel                      // CRIDockerdCompat: an image label selector, "key" or "key=value"
	KindSandbox                    // CRIDockerdCompat: the sandbox image, equal to a repo tag
)

// String returns the kind's name, such as "tag" or "glob".
func (k Kind) String() string {
	switch k {
	case KindTag:
		return "tag"
	case KindDigest:
		return "digest"
	case KindImageID:
		return "image-id"
	case KindGlob:
		return "glob"
	case KindKeyword:
		return "keyword"
	case KindExact:
		return "exact"
	case KindContains:
		return "contains"
	case KindRepository:
		return "repository"
	case KindPrefix:
		return "prefix"
	case KindLabel:
		return "label"
	case KindSandbox:
		return "sandbox"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// MarshalText returns the name that String returns, "" for the zero Kind
// (no match); a kind outside the constants above is an error.
func (k Kind) MarshalText() ([]byte, error) {
	if k == 0 {
		return nil, nil
	}
	if k > KindSandbox {
		return nil, fmt.Errorf("pin: unknown kind %d", uint8(k))
	}
	return []byte(k.String()), nil
}

// UnmarshalText accepts the names that String returns for the constants
// above ("tag", "glob", ...) and "" for the zero Kind; any other text is an
// error: the set is closed.
func (k *Kind) UnmarshalText(text []byte) error {
	if len(text) == 0 {
		*k = 0
		return nil
	}
	for c := KindTag; c <= KindSandbox; c++ {
		if string(text) == c.String() {
			*k = c
			return nil
		}
	}
	return fmt.Errorf("pin: unknown kind %q", text)
}

var (
	_ encoding.TextUnmarshaler = (*Kind)(nil)
	_ encoding.TextUnmarshaler = (*Mode)(nil)
)
