package config

import (
	"errors"

	"github.com/sandboxpin/sandboxpin/resolve/internal/nodefs"
	"github.com/sandboxpin/sandboxpin/resolve/internal/tomlfile"
)

// tomlDoc is one decoded TOML file of the node, read by the decoder of the
// runtime that owns it (see package tomlfile).
type tomlDoc struct {
	path string // node path, "/etc/containerd/config.toml"
	doc  *tomlfile.Doc
}

// maxTOMLEntriesPerSource bounds the tables and keys of all the TOML files
// one source reads (a containerd config and its imports, crio.conf and its
// drop-ins): go-toml's decoder is quadratic in their number per file, so
// this bounds the time of all files together to about four files at
// tomlfile.MaxEntries (0.4 s).
const maxTOMLEntriesPerSource = 4 * tomlfile.MaxEntries

// parseTOML decodes name with dec, charging its tables and keys to left,
// what is left of its source's maxTOMLEntriesPerSource. Every error is a
// *nodefs.ConfigError with the line.
func parseTOML(name string, b []byte, dec tomlfile.Decoder, left *int) (*tomlDoc, error) {
	path := nodefs.NodePath(name)
	d, err := tomlfile.Parse(b, dec, *left)
	if err != nil {
		return nil, tomlErr(path, err)
	}
	*left -= d.Entries()
	return &tomlDoc{path: path, doc: d}, nil
}

// tomlErr turns a *tomlfile.Error into a *ConfigError for path.
func tomlErr(path string, err error) error {
	if e := (*tomlfile.Error)(nil); errors.As(err, &e) {
		return nodefs.Invalid(path, e.Key, e.Line, e.Err)
	}
	return nodefs.Invalid(path, "", 0, err)
}

// line returns the line of a key path, or 0 when it is not written in the
// file.
func (d *tomlDoc) line(keys ...string) int { return d.doc.Line(keys...) }

// lookup walks nested tables.
func (d *tomlDoc) lookup(keys ...string) (any, bool) { return d.doc.Lookup(keys...) }

// str returns a string value; a value of another type is a *ConfigError.
// ok is false when the key is absent.
func (d *tomlDoc) str(keys ...string) (string, bool, error) {
	s, ok, err := d.doc.String(keys...)
	if err != nil {
		return "", false, tomlErr(d.path, err)
	}
	return s, ok, nil
}

// strs returns a string array; ok is false when the key is absent.
func (d *tomlDoc) strs(keys ...string) ([]string, bool, error) {
	s, ok, err := d.doc.Strings(keys...)
	if err != nil {
		return nil, false, tomlErr(d.path, err)
	}
	return s, ok, nil
}

// table returns a sub-table; ok is false when absent.
func (d *tomlDoc) table(keys ...string) (map[string]any, bool, error) {
	t, ok, err := d.doc.Table(keys...)
	if err != nil {
		return nil, false, tomlErr(d.path, err)
	}
	return t, ok, nil
}

// strAt returns the string at keys with where it is written; nil when the
// key is absent. A value of another type is a *nodefs.ConfigError.
func (d *tomlDoc) strAt(keys ...string) (*Found, error) {
	s, ok, err := d.str(keys...)
	if err != nil || !ok {
		return nil, err
	}
	return &Found{Value: s, Path: d.path, Line: d.line(keys...), Key: tomlfile.Key(keys...)}, nil
}
