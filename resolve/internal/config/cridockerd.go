package config

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/sandboxpin/sandboxpin/resolve/internal/nodefs"
	"github.com/sandboxpin/sandboxpin/resolve/internal/unitfile"
)

const (
	criDockerdUnit = "cri-docker.service"
	criDockerdFlag = "pod-infra-container-image"
	// The list flags of cri-dockerd 0.4.7 and later (cri-dockerd#571,
	// core/pinned.go read at 89da1c1793ab; see pin.ModeCRIDockerdCompat).
	criDockerdPinnedImages = "pinned-images"
	criDockerdPinnedLabels = "pinned-image-labels"
)

// systemdUnitDirs lists the unit directories by precedence, highest first,
// as `systemd-analyze unit-paths` lists them on Debian (Debian bug report
// on dh_installsystemd, lists.debian.org msg1803683; the generator,
// control and attached directories left out): /usr/local/lib/systemd/system
// is where containerd's docs/getting-started.md (v2.4.0-beta.0) has
// containerd.service installed. /lib/systemd/system is
// /usr/lib/systemd/system on merged-/usr systems; both are read.
func systemdUnitDirs() []string {
	return []string{"etc/systemd/system", "run/systemd/system", "usr/local/lib/systemd/system", "lib/systemd/system", "usr/lib/systemd/system"}
}

// unitFiles returns the fs paths of unit (the first found in
// systemdUnitDirs) and of its unit.d/*.conf drop-ins (from all directories,
// ordered by file name, a name in a higher directory masking the same name
// in a lower one), in the order systemd applies them; nil when no unit
// file exists.
func unitFiles(fsys fs.FS, unit string) ([]string, error) {
	var files []string
	for _, dir := range systemdUnitDirs() {
		p := path.Join(dir, unit)
		if fi, err := fs.Stat(fsys, p); err == nil && !fi.IsDir() {
			files = append(files, p)
			break
		}
	}
	if len(files) == 0 {
		return nil, nil
	}
	dropIns := map[string]string{} // base name -> fs path, highest directory wins
	for _, dir := range systemdUnitDirs() {
		matches, err := fs.Glob(fsys, path.Join(dir, unit+".d", "*.conf"))
		if err != nil {
			return nil, nodefs.Invalid(nodefs.NodePath(dir), "", 0, err)
		}
		for _, m := range matches {
			if _, ok := dropIns[path.Base(m)]; !ok {
				dropIns[path.Base(m)] = m
			}
		}
	}
	bases := make([]string, 0, len(dropIns))
	for b := range dropIns {
		bases = append(bases, b)
	}
	slices.Sort(bases)
	for _, b := range bases {
		files = append(files, dropIns[b])
	}
	return files, nil
}

// CRIDockerd is what cri-dockerd's systemd unit says.
type CRIDockerd struct {
	Files      []string // unit file, then drop-ins, in systemd's order
	ExecStart  *Found   // the ExecStart that wins (Value is the whole command line)
	PauseImage *Found   // --pod-infra-container-image in that ExecStart; nil if absent
	// PinnedImages and PinnedImageLabels are the values of every
	// --pinned-images and --pinned-image-labels in that ExecStart, one
	// Found per occurrence, as written (split them with PinnedListEntries).
	PinnedImages, PinnedImageLabels []Found
	Notes                           []string
}

// ReadCRIDockerd reads the command line systemd runs for
// cri-docker.service (ReadCommand: the unit, its drop-ins and its
// environment). It returns nil, nil when no unit file exists.
func ReadCRIDockerd(fsys fs.FS) (*CRIDockerd, error) {
	c, err := ReadCommand(fsys, criDockerdUnit)
	if err != nil || c == nil {
		return nil, err
	}
	cfg := &CRIDockerd{Files: c.Files, ExecStart: c.ExecStart, Notes: c.Notes}
	if f := c.Flag("--" + criDockerdFlag); f != nil && f.Value != "" {
		cfg.PauseImage = f
	}
	cfg.PinnedImages = c.Flags("--" + criDockerdPinnedImages)
	cfg.PinnedImageLabels = c.Flags("--" + criDockerdPinnedLabels)
	return cfg, nil
}

// execStart is one ExecStart= of a unit file.
type execStart struct {
	at   Found
	e    unitfile.Entry
	args []unitfile.Word // offsets in e.Value
}

// parseExecStarts applies the ExecStart= lines of one unit file (or drop-in)
// in its [Service] section to execs. seen counts the ExecStart= lines of the
// unit, against maxExecStarts.
func parseExecStarts(path string, b []byte, execs []execStart, seen *int) ([]execStart, error) {
	for e, err := range unitfile.Entries(b) {
		if err != nil {
			return nil, nodefs.Invalid(path, "", e.Line, err)
		}
		if e.Section != "Service" || e.Key != "ExecStart" {
			continue
		}
		if *seen++; *seen > maxExecStarts {
			return nil, nodefs.Invalid(path, "ExecStart", e.Line, fmt.Errorf("%w: more than %d ExecStart= lines in the unit and its drop-ins",
				nodefs.ErrLimit, maxExecStarts))
		}
		if e.Value == "" {
			execs = execs[:0]
			continue
		}
		args, err := splitCommand(e.Value)
		if err != nil {
			var we *unitfile.WordError
			errors.As(err, &we)
			return nil, nodefs.Invalid(path, "ExecStart", e.LineAt(we.Off), err)
		}
		if len(args) == 0 {
			continue
		}
		execs = append(execs, execStart{at: Found{Value: e.Value, Path: path, Line: e.Line, Key: "ExecStart"}, e: e, args: args})
	}
	return execs, nil
}

// splitCommand splits an ExecStart= value into its words, its special
// prefixes (@ - : + ! !!) stripped, each word's offset in the value.
// Past maxCommandWords, the error wraps errTooManyWords.
func splitCommand(v string) ([]unitfile.Word, error) {
	cmd := strings.TrimLeft(v, "@-:+!")
	words, err := unitfile.Split(cmd, maxCommandWords)
	var we *unitfile.WordError
	if errors.As(err, &we) {
		we.Off += len(v) - len(cmd)
		if errors.Is(err, unitfile.ErrTooManyWords) {
			we.Err = errTooManyWords
		}
		return nil, we
	}
	for i := range words {
		words[i].Off += len(v) - len(cmd)
	}
	return words, nil
}

// flagValue returns the value of the last --name=value or --name value in
// args, and the index of the word holding the value.
func flagValue(args []unitfile.Word, name string) (string, int, bool) {
	val, at, ok := "", 0, false
	long := "--" + name
	for i := 0; i < len(args); i++ {
		a := args[i].Text
		switch {
		case a == "--":
			return val, at, ok // end of flags
		case strings.HasPrefix(a, long+"="):
			val, at, ok = a[len(long)+1:], i, true
		case a == long && i+1 < len(args):
			val, at, ok = args[i+1].Text, i+1, true
			i++
		}
	}
	return val, at, ok
}

// ExecPath returns the fs path of the executable an ExecStart= value names
// ("-/usr/bin/cri-dockerd --flag" gives "usr/bin/cri-dockerd"), or "" when
// it names none by an absolute path without variables.
func ExecPath(execStart string) string {
	words, err := splitCommand(execStart)
	if err != nil || len(words) == 0 {
		return ""
	}
	p := words[0].Text
	if !strings.HasPrefix(p, "/") || strings.Contains(p, "$") {
		return ""
	}
	name, ok := nodefs.FSPath(p)
	if !ok || name == "." {
		return ""
	}
	return name
}
