package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// MaxImagesSize bounds the input [ReadImages] reads: 10,000 images with a
// dozen names each take about 10 MiB of `crictl images -o json`, so 64 MiB
// leaves room for any real node and refuses a file that is not one.
const MaxImagesSize = 64 << 20

// ErrInvalidImages is wrapped by every error of [ReadImages] about its
// input: it is not the JSON `crictl images -o json` prints, or is larger
// than [MaxImagesSize].
var ErrInvalidImages = errors.New("not the JSON of `crictl images -o json`")

// ImagesError reports input that [ReadImages] could not use, and where.
type ImagesError struct {
	// Offset is the byte offset in the input at which reading failed (for
	// a key, where the key starts); 0 when the input parsed as JSON and
	// Field says what is wrong.
	Offset int64
	// Field is the JSON field, such as "images" or "images[2]" or
	// "images.repoTags" (for a key: "images[2].repo_tags"), "" when the
	// input did not parse as JSON.
	Field string
	// Err is the cause; it wraps ErrInvalidImages.
	Err error
}

func (e *ImagesError) Error() string {
	s := "offset " + strconv.FormatInt(e.Offset, 10)
	if e.Field != "" {
		s += ": " + e.Field
	}
	return s + ": " + e.Err.Error()
}

func (e *ImagesError) Unwrap() error { return e.Err }

// ListedImage is one image as the runtime's ListImages lists it, in the
// JSON `crictl images -o json` prints (cri-tools cmd/crictl/image.go,
// v1.37.0: the CRI Image message through protojson, so camelCase keys;
// size, uid, username and spec are not read). It implements [Image] with
// the getters of the generated *runtimeapi.Image, which a nil
// *ListedImage answers with zero values.
type ListedImage struct {
	ID          string   `json:"id"`
	RepoTags    []string `json:"repoTags"`
	RepoDigests []string `json:"repoDigests"`
	Pinned      bool     `json:"pinned"`
}

var _ Image = (*ListedImage)(nil)

// GetId returns the image ID, "" for a nil i.
func (i *ListedImage) GetId() string { //nolint:revive // the cri-api getter name
	if i == nil {
		return ""
	}
	return i.ID
}

// GetRepoTags returns the image's tags, nil for a nil i.
func (i *ListedImage) GetRepoTags() []string {
	if i == nil {
		return nil
	}
	return i.RepoTags
}

// GetRepoDigests returns the image's digests, nil for a nil i.
func (i *ListedImage) GetRepoDigests() []string {
	if i == nil {
		return nil
	}
	return i.RepoDigests
}

// GetPinned returns the runtime's own pinned flag, false for a nil i.
func (i *ListedImage) GetPinned() bool { return i != nil && i.Pinned }

// ReadImages reads the JSON `crictl images -o json` prints: an object
// whose "images" key holds the images, as in {"images": [{"id": ...,
// "repoTags": [...], "repoDigests": [...], "pinned": false}]}. It reads at
// most [MaxImagesSize] bytes. Input it cannot use is an [*ImagesError]
// wrapping [ErrInvalidImages] that says the offset and the field: not JSON,
// no "images" key (or null), an image that is null or of the wrong type,
// or too large.
//
// Keys are read exactly as crictl writes them (protojson's camelCase names of
// the CRI ListImagesResponse and Image messages). A key that appears twice in
// one object is an error, as in package criinfo, and so is a key that spells
// one of those names otherwise ("Images", "repo_tags", "RepoTags": other
// letter case as [strings.EqualFold] folds it, '_' or '-'), so that a hand-written file is not read as an
// image without names. Other keys are ignored, as a newer crictl may add
// some. An error of r itself is returned as it is.
func ReadImages(r io.Reader) ([]*ListedImage, error) {
	if r == nil {
		return nil, &ImagesError{Err: fmt.Errorf("%w: no input", ErrInvalidImages)}
	}
	b, err := io.ReadAll(io.LimitReader(r, MaxImagesSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxImagesSize {
		return nil, &ImagesError{Offset: MaxImagesSize, Err: fmt.Errorf("%w: larger than %d MiB", ErrInvalidImages, MaxImagesSize>>20)}
	}
	if err := checkKeys(b); err != nil {
		return nil, err
	}
	var list struct {
		Images *[]*ListedImage `json:"images"`
	}
	if err := json.Unmarshal(b, &list); err != nil {
		ie := &ImagesError{Err: fmt.Errorf("%w: %w", ErrInvalidImages, err)}
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			ie.Offset = se.Offset
		case errors.As(err, &te):
			ie.Offset, ie.Field = te.Offset, te.Field
		}
		return nil, ie
	}
	if list.Images == nil {
		return nil, &ImagesError{Field: "images", Err: fmt.Errorf("%w: no \"images\" key", ErrInvalidImages)}
	}
	for i, img := range *list.Images {
		if img == nil {
			return nil, &ImagesError{Field: "images[" + strconv.Itoa(i) + "]", Err: fmt.Errorf("%w: a null image", ErrInvalidImages)}
		}
	}
	return *list.Images, nil
}

// The keys crictl writes (cri-tools cmd/crictl/util.go, v1.36.0:
// protojson.MarshalOptions{EmitDefaultValues: true}, so every field, in
// camelCase), for the messages of k8s.io/cri-api pkg/apis/runtime/v1/api.proto
// (v0.37.2): ListImagesResponse has "images", Image the eight below.
var (
	listKeys  = []string{"images"}
	imageKeys = []string{"id", "repoTags", "repoDigests", "size", "uid", "username", "spec", "pinned"}
)

// checkKeys walks the JSON tokens of b and refuses a duplicate key in any
// object, and a key of the list or of an image that differs from one of
// listKeys or imageKeys only in letter case, '_' or '-' (encoding/json
// matches keys with case folding, as strings.EqualFold, and would ignore a
// key with '_'). It leaves
// syntax errors to json.Unmarshal, which reports them with their offset.
func checkKeys(b []byte) error {
	type frame struct {
		obj    bool
		path   string          // the JSON field of this value, as ImagesError.Field
		known  []string        // obj: the keys this object defines
		seen   map[string]bool // obj: the keys read
		key    string          // obj: the key whose value comes next
		images bool            // array: the list's "images"
		n      int             // array: elements read
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var stack []*frame
	wantKey := false // the next token is a key of the innermost object, or '}'
	for {
		off := dec.InputOffset()
		for off < int64(len(b)) && strings.IndexByte(" \t\r\n:,", b[off]) >= 0 {
			off++
		}
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if tok == json.Delim('}') || tok == json.Delim(']') {
			stack = stack[:len(stack)-1]
			wantKey = len(stack) > 0 && stack[len(stack)-1].obj
			continue
		}
		if wantKey {
			k, _ := tok.(string) // the decoder returns only strings here
			field := joinField(top.path, k)
			if top.seen[k] {
				return &ImagesError{Offset: off, Field: field, Err: fmt.Errorf("%w: duplicate key %q", ErrInvalidImages, k)}
			}
			top.seen[k] = true
			for _, want := range top.known {
				if k != want && strings.EqualFold(unseparated(k), want) {
					return &ImagesError{Offset: off, Field: field, Err: fmt.Errorf("%w: key %q: crictl writes %q", ErrInvalidImages, k, want)}
				}
			}
			top.key, wantKey = k, false
			continue
		}
		f := &frame{}
		switch {
		case top == nil:
			f.known = listKeys
		case top.obj:
			f.path = joinField(top.path, top.key)
			f.images = len(stack) == 1 && top.key == "images"
			wantKey = true
		default:
			f.path = top.path + "[" + strconv.Itoa(top.n) + "]"
			top.n++
			if top.images {
				f.known = imageKeys
			}
		}
		switch tok {
		case json.Delim('{'):
			f.obj, f.seen = true, map[string]bool{}
			stack = append(stack, f)
			wantKey = true
		case json.Delim('['):
			stack = append(stack, f)
			wantKey = false
		}
	}
}

// joinField returns the field key inside the field path.
func joinField(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// unseparated returns k without '_' and '-'.
func unseparated(k string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r == '-' {
			return -1
		}
		return r
	}, k)
}
