package audit

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
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
	// Offset is the byte offset in the input at which reading failed; 0
	// when the input parsed as JSON and Field says what is wrong.
	Offset int64
	// Field is the JSON field, such as "images" or "images[2]" or
	// "images.repoTags", "" when the input did not parse as JSON.
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
// or too large. An error of r itself is returned as it is.
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
