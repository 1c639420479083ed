package config

import (
	"fmt"
	"io/fs"

	"github.com/sandboxpin/sandboxpin/resolve/internal/nodefs"
	"github.com/sandboxpin/sandboxpin/resolve/internal/tomlfile"
)

const (
	crioMain   = "etc/crio/crio.conf"
	crioDropIn = "etc/crio/crio.conf.d"
)

// CRIO is what crio.conf and its drop-ins say.
type CRIO struct {
	Files      []string // every file read, in CRI-O's order
	PauseImage *Found   // [crio.image] pause_image; nil when no file sets it
	Pinned     []Found  // [crio.image] pinned_images of the last file that sets it
	PinnedSet  bool     // some file sets pinned_images (possibly to [])
	Problems   []Problem
}

// ReadCRIO reads /etc/crio/crio.conf, then every file under
// /etc/crio/crio.conf.d/ recursively in lexical order (each directory's
// entries by name, a subdirectory's files where its name sorts), as CRI-O
// does: a key
// in a later file overrides the same key of an earlier one, and an array
// (pinned_images) replaces the earlier array entirely. It returns nil, nil
// when none of these files exists.
func ReadCRIO(fsys fs.FS) (*CRIO, error) {
	names := []string{crioMain}
	err := fs.WalkDir(fsys, crioDropIn, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == crioDropIn {
				return fs.SkipAll // no drop-in directory
			}
			return nodefs.Invalid(nodefs.NodePath(p), "", 0, err)
		}
		if !d.IsDir() {
			names = append(names, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var cfg *CRIO
	left := maxTOMLEntriesPerSource
	for _, name := range names {
		b, err := nodefs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		if b == nil {
			continue
		}
		doc, err := parseTOML(name, b, tomlfile.BurntSushi, &left)
		if err != nil {
			return nil, err
		}
		if cfg == nil {
			cfg = &CRIO{}
		}
		cfg.Files = append(cfg.Files, doc.path)
		if err := cfg.extract(doc); err != nil {
			return nil, err
		}
	}
	return cfg, nil
}

// extract records what one file says into cfg: a later file's key
// overrides an earlier one's.
func (cfg *CRIO) extract(doc *tomlDoc) error {
	at, err := doc.strAt("crio", "image", "pause_image")
	switch {
	case err != nil:
		return err
	case at != nil && at.Value == "":
		cfg.Problems = append(cfg.Problems, Problem{At: *at,
			Msg: at.Where() + ": pause_image is empty; CRI-O needs a pause image: set it or remove the key"})
	case at != nil:
		cfg.PauseImage = at
	}
	keys := []string{"crio", "image", "pinned_images"}
	list, ok, err := doc.strs(keys...)
	if err != nil || !ok {
		return err
	}
	line := doc.line(keys...)
	cfg.PinnedSet = true
	cfg.Pinned = cfg.Pinned[:0:0]
	for _, p := range list {
		at := Found{Value: p, Path: doc.path, Line: line, Key: tomlfile.Key(keys...)}
		if p == "*" {
			cfg.Problems = append(cfg.Problems, Problem{At: at,
				Msg: fmt.Sprintf("%s: pinned_images entry \"*\" makes CRI-O panic at start-up; use \"**\" to pin everything or remove it",
					at.Where())})
			continue
		}
		cfg.Pinned = append(cfg.Pinned, at)
	}
	return nil
}
