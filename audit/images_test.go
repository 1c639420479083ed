package audit

import (
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadImagesCapture(t *testing.T) {
	t.Parallel()
	f, err := os.Open("testdata/crictl-images.json")
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.Close() })
	images, err := ReadImages(f)
	require.NoError(t, err)
	require.Len(t, images, 2)
	assert.Equal(t, []string{mirror, stored}, images[0].GetRepoTags())
	assert.Equal(t, "sha256:7031c1b283388d2c2e09b57badb803c05ebed362dc88d84b480cc47f72a21097", images[0].GetId())
	assert.False(t, images[0].GetPinned())
	assert.Empty(t, images[1].GetRepoDigests())
}

// badImages are inputs ReadImages refuses, with where it says they fail.
var badImages = []struct {
	name       string
	in         string // the input
	wantOffset int64  // ImagesError.Offset
	wantField  string // ImagesError.Field
	wantMsg    string // a substring of the message
}{
	{name: "syntax", in: `{"images": [`, wantOffset: 12, wantMsg: "unexpected end of JSON input"},
	{name: "not JSON", in: "version = 2\n", wantOffset: 1, wantMsg: "invalid character"},
	{name: "no images key", in: `{}`, wantField: "images", wantMsg: `no "images" key`},
	{name: "null images", in: `{"images": null}`, wantField: "images", wantMsg: `no "images" key`},
	{name: "images not an array", in: `{"images": {}}`, wantOffset: 12, wantField: "images", wantMsg: "cannot unmarshal"},
	{name: "a tag not a string", in: `{"images": [{"id": "sha256:1", "repoTags": [1]}]}`, wantOffset: 45, wantField: "images.repoTags", wantMsg: "cannot unmarshal number"},
	{name: "a null image", in: `{"images": [{"id": "sha256:1"}, null]}`, wantField: "images[1]", wantMsg: "a null image"},
	{name: "empty", in: ``, wantMsg: "unexpected end of JSON input"},
	// Keys as crictl writes them, no duplicates (issue 52: encoding/json took
	// {"Images": ...}, kept the last of two keys and read an image with
	// "repo_tags" as one without names).
	{name: "Images", in: `{"Images": []}`, wantOffset: 1, wantField: "Images", wantMsg: `key "Images": crictl writes "images"`},
	{name: "repo_tags", in: `{"images": [{"id": "sha256:1", "repo_tags": ["pause:3.10"]}]}`, wantOffset: 31, wantField: "images[0].repo_tags", wantMsg: `crictl writes "repoTags"`},
	{name: "RepoDigests", in: `{"images": [{"id": "1"}, {"RepoDigests": []}]}`, wantOffset: 26, wantField: "images[1].RepoDigests", wantMsg: `crictl writes "repoDigests"`},
	{name: "ID", in: `{"images": [{"ID": "1"}]}`, wantOffset: 13, wantField: "images[0].ID", wantMsg: `crictl writes "id"`},
	{name: "folded s", in: `{"imageſ": []}`, wantOffset: 1, wantField: "imageſ", wantMsg: `crictl writes "images"`},
	{name: "duplicate images", in: `{"images": [], "images": [{"id": "1"}]}`, wantOffset: 15, wantField: "images", wantMsg: `duplicate key "images"`},
	{name: "duplicate pinned", in: `{"images": [{"pinned": true, "pinned": false}]}`, wantOffset: 29, wantField: "images[0].pinned", wantMsg: `duplicate key "pinned"`},
	{name: "duplicate deep", in: `{"images": [{"spec": {"annotations": {"a": "1", "a": "2"}}}]}`, wantOffset: 48, wantField: "images[0].spec.annotations.a", wantMsg: `duplicate key "a"`},
}

// TestReadImagesUnknownKeys: keys crictl does not write and that spell none
// of its names are ignored, as a newer crictl may add some.
func TestReadImagesUnknownKeys(t *testing.T) {
	t.Parallel()
	in := `{"images": [{"id": "sha256:1", "repoTags": ["pause:3.10"], "size": "1", "uid": null, "username": "",` +
		` "spec": {"image": "x", "annotations": {"repo_tags": "1"}}, "pinned": true, "newField": [{"id": 2}]}], "next": {"Images": 1}}`
	images, err := ReadImages(strings.NewReader(in))
	require.NoError(t, err)
	require.Len(t, images, 1)
	assert.Equal(t, &ListedImage{ID: "sha256:1", RepoTags: []string{"pause:3.10"}, Pinned: true}, images[0])
}

func TestReadImagesErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range badImages {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			images, err := ReadImages(strings.NewReader(tt.in))
			assert.Nil(t, images)
			require.ErrorIs(t, err, ErrInvalidImages)
			var ie *ImagesError
			require.ErrorAs(t, err, &ie)
			assert.Equal(t, tt.wantOffset, ie.Offset, "ReadImages(%q) offset", tt.in)
			assert.Equal(t, tt.wantField, ie.Field, "ReadImages(%q) field", tt.in)
			assert.Contains(t, err.Error(), tt.wantMsg)
			assert.Contains(t, err.Error(), "crictl images -o json", "the error says what was wanted")
		})
	}
}

func TestReadImagesLimits(t *testing.T) {
	t.Parallel()
	// Bounded: a reader that never ends is read up to the limit only.
	_, err := ReadImages(io.LimitReader(infinite{}, MaxImagesSize+10))
	var ie *ImagesError
	require.ErrorAs(t, err, &ie)
	assert.ErrorIs(t, err, ErrInvalidImages)
	assert.Equal(t, int64(MaxImagesSize), ie.Offset)
	assert.Contains(t, err.Error(), "larger than 64 MiB")

	// The reader's own error is returned as it is.
	boom := errors.New("boom")
	_, err = ReadImages(iotest.ErrReader(boom))
	assert.ErrorIs(t, err, boom)
	assert.NotErrorIs(t, err, ErrInvalidImages)

	// No reader is an error, not a panic.
	_, err = ReadImages(nil)
	assert.ErrorIs(t, err, ErrInvalidImages)
}

// infinite reads spaces forever.
type infinite struct{}

func (infinite) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	return len(p), nil
}

func TestListedImageNil(t *testing.T) {
	t.Parallel()
	var img *ListedImage
	assert.Empty(t, img.GetId())
	assert.Nil(t, img.GetRepoTags())
	assert.Nil(t, img.GetRepoDigests())
	assert.False(t, img.GetPinned())
}
