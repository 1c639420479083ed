package audit

import (
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/sandboxpin/sandboxpin/resolve"
)

// FuzzJudge judges a sandbox image name against one stored image with
// arbitrary names: no panic, and a verdict that holds together.
func FuzzJudge(f *testing.F) {
	f.Add(stored, stored+"\n"+mirror, "", true, true)
	f.Add(alias, stored, "registry.k8s.io/pause@sha256:"+hex64, false, false)
	f.Add("REGISTRY.K8S.IO/pause:3.10.1", stored, "", true, false)
	f.Add("sha256:"+hex64, stored, "", true, true)
	f.Add("pause:3.10.1", "docker.io/library/pause:3.10.1", "", false, true)
	f.Fuzz(func(t *testing.T, configured, tags, digests string, pinned, storedAs bool) {
		res := &resolve.Result{Runtime: "containerd", SandboxImage: configured, Pins: []string{configured}}
		if _, err := res.Matcher(); err != nil {
			return // resolve reports such an image as a conflict
		}
		img := image{id: "sha256:" + hex64, tags: split(tags), digests: split(digests), pinned: pinned}
		v, err := Judge(res, Observation[image]{Images: []image{img}, Lookup: looked(storedAs)})
		if configured == "" {
			if err == nil {
				t.Fatal("no error for an empty sandbox image")
			}
			return
		}
		if err != nil {
			t.Fatalf("Judge(%q): %v", configured, err)
		}
		s := v.Sandbox
		names := append(append([]string{img.id}, img.tags...), img.digests...)
		switch {
		case s.Present != (s.StoredAs != "" && slices.Contains(names, s.StoredAs)):
			t.Fatalf("Present %v, StoredAs %q, names %q", s.Present, s.StoredAs, names)
		case s.Present && s.Spelling == SpellingExact && s.StoredAs != configured:
			t.Fatalf("exact spelling %q of %q", s.StoredAs, configured)
		case s.Present && s.Spelling == SpellingCase && !strings.EqualFold(s.StoredAs, configured):
			t.Fatalf("case spelling %q of %q", s.StoredAs, configured)
		case v.Unprotected > v.MustPin || v.MustPin > 1:
			t.Fatalf("MustPin %d, Unprotected %d of one image", v.MustPin, v.Unprotected)
		case v.Protected() != (s.Present && pinned && storedAs):
			t.Fatalf("status %s: present %v, pinned %v, stored as configured %v", v.Status, s.Present, pinned, storedAs)
		case !v.Protected() && s.Present && v.Fix == nil:
			t.Fatalf("status %s without a fix", v.Status)
		case v.Fix != nil && v.Fix.Message == "":
			t.Fatal("a fix without a message")
		}
	})
}

// split splits s into lines, "" into none.
func split(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// FuzzReadImages reads arbitrary input as `crictl images -o json`: no
// panic; an error wraps ErrInvalidImages and comes with no images; images
// read hold no nil and read back the same from their own JSON.
func FuzzReadImages(f *testing.F) {
	for _, tt := range badImages {
		f.Add(tt.in)
	}
	if b, err := os.ReadFile("testdata/crictl-images.json"); err == nil {
		f.Add(string(b))
	}
	f.Add(`{"images": []}`)
	f.Fuzz(func(t *testing.T, in string) {
		images, err := ReadImages(strings.NewReader(in))
		if err != nil {
			if images != nil || !errors.Is(err, ErrInvalidImages) {
				t.Fatalf("ReadImages(%q) = %v, %v", in, images, err)
			}
			return
		}
		if slices.Contains(images, nil) {
			t.Fatalf("ReadImages(%q) holds a nil image", in)
		}
		b, err := json.Marshal(struct {
			Images []*ListedImage `json:"images"`
		}{images})
		if err != nil {
			t.Fatal(err)
		}
		again, err := ReadImages(strings.NewReader(string(b)))
		if err != nil || !reflect.DeepEqual(images, again) {
			t.Fatalf("ReadImages of its own JSON %s = %v, %v; want %v", b, again, err, images)
		}
	})
}
