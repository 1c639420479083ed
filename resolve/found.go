package resolve

import (
	"fmt"
	"io/fs"
	"path"
	"strings"
)

// found is one value read from a node file, with where it was written.
type found struct {
	Value string // exactly as written
	Path  string // node path, "/etc/containerd/config.toml"
	Line  int    // 1-based; 0 if unknown
	Key   string // key, variable or flag it was read from
}

// origin is the file:line form used in Candidate.Origin.
func (f found) origin() string {
	if f.Line > 0 {
		return fmt.Sprintf("%s:%d", f.Path, f.Line)
	}
	return f.Path
}

// where is the "file:line (key)" form used in messages.
func (f found) where() string {
	if f.Key == "" {
		return f.origin()
	}
	return f.origin() + " (" + f.Key + ")"
}

// nodePath turns an fs.FS path into the absolute path the node knows.
func nodePath(name string) string { return "/" + strings.TrimPrefix(name, "/") }

// fsPath turns an absolute node path into an fs.FS path; ok is false when the
// result is not a valid fs.FS path (it escapes the root).
func fsPath(p string) (string, bool) {
	p = strings.TrimPrefix(path.Clean("/"+p), "/")
	if p == "" {
		p = "."
	}
	return p, fs.ValidPath(p)
}
