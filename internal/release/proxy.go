package release

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

// Source says where a module's files come from: the directory Subdir of the
// git repository Root, as committed at Rev. The zip holds what the go
// command's own zip of that revision holds (x/mod/zip.CreateFromVCS: the
// files git archives, with the repository's LICENSE in a nested module that
// has none), never the files on disk: a linked worktree's .git file, or a
// nested module without the LICENSE, would give other go.sum hashes than
// the module proxies serve.
type Source struct {
	Root   string // absolute path of a git work tree with its own .git directory (not a linked worktree)
	Subdir string // the module's directory under Root, "" for the root module
	Rev    string // a git revision, such as the module's tag
}

// AddModule adds version of the module in src (its path is its go.mod's),
// to the file-system module proxy in dir (the layout `go help goproxy` describes:
// dir/<escaped path>/@v/{list,VERSION.info,VERSION.mod,VERSION.zip}), for
// GOPROXY=file://dir. when is the version's time in its .info file. A
// version already there is replaced.
func AddModule(dir, version string, when time.Time, src Source) error {
	gomod, err := src.read("go.mod")
	if err != nil {
		return fmt.Errorf("release: %s: %w", path.Join(src.Root, src.Subdir), err)
	}
	modPath := modfile.ModulePath(gomod)
	mv := module.Version{Path: modPath, Version: version}
	escPath, err := module.EscapePath(modPath)
	if err != nil {
		return err
	}
	escVer, err := module.EscapeVersion(version)
	if err != nil {
		return err
	}
	at := filepath.Join(dir, filepath.FromSlash(escPath), "@v")
	if err := os.MkdirAll(at, 0o755); err != nil { //nolint:gosec // G301: a proxy others read
		return err
	}
	var z bytes.Buffer
	if err := zip.CreateFromVCS(&z, mv, src.Root, src.Rev, src.Subdir); err != nil {
		return fmt.Errorf("release: %s: %w", mv, err)
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, when.UTC()})
	if err != nil {
		return err
	}
	for name, data := range map[string][]byte{escVer + ".mod": gomod, escVer + ".zip": z.Bytes(), escVer + ".info": info} {
		if err := os.WriteFile(filepath.Join(at, name), data, 0o644); err != nil { //nolint:gosec // G306: a proxy others read
			return err
		}
	}
	return addToList(filepath.Join(at, "list"), version)
}

// addToList adds version to the proxy's list file, one version a line.
func addToList(list, version string) error {
	b, err := os.ReadFile(list)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	versions := strings.Fields(string(b))
	if !slices.Contains(versions, version) {
		versions = append(versions, version)
	}
	return os.WriteFile(list, []byte(strings.Join(versions, "\n")+"\n"), 0o644) //nolint:gosec // G306: a proxy others read
}

// read returns the file name of the module src.
func (src Source) read(name string) ([]byte, error) {
	cmd := exec.Command("git", "-C", src.Root, "show", src.Rev+":"+path.Join(src.Subdir, name))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git show %s:%s: %w: %s", src.Rev, path.Join(src.Subdir, name), err, bytes.TrimSpace(stderr.Bytes()))
	}
	return out, nil
}
