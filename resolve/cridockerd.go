package resolve

import (
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
)

const (
	criDockerdUnit = "cri-docker.service"
	criDockerdFlag = "pod-infra-container-image"
)

// systemdUnitDirs lists the unit directories by precedence, highest first.
// /lib/systemd/system is /usr/lib/systemd/system on merged-/usr systems;
// both are read.
func systemdUnitDirs() []string {
	return []string{"etc/systemd/system", "run/systemd/system", "lib/systemd/system", "usr/lib/systemd/system"}
}

// criDockerdConfig is what cri-dockerd's systemd unit says.
type criDockerdConfig struct {
	Files      []string // unit file, then drop-ins, in systemd's order
	ExecStart  *found   // the ExecStart that wins (Value is the whole command line)
	PauseImage *found   // --pod-infra-container-image in that ExecStart; nil if absent
	Notes      []string
}

// readCRIDockerd reads cri-docker.service (the first found in
// systemdUnitDirs) and its cri-docker.service.d/*.conf drop-ins (from all
// directories, ordered by file name, a name in a higher directory masking the
// same name in a lower one), as systemd does. In [Service], an empty
// "ExecStart=" clears the commands before it; the last ExecStart wins. It
// returns nil, nil when no unit file exists.
func readCRIDockerd(fsys fs.FS) (*criDockerdConfig, error) {
	var files []string
	for _, dir := range systemdUnitDirs() {
		p := path.Join(dir, criDockerdUnit)
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
		matches, err := fs.Glob(fsys, path.Join(dir, criDockerdUnit+".d", "*.conf"))
		if err != nil {
			return nil, configErr(nodePath(dir), "", 0, err)
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

	cfg := &criDockerdConfig{}
	var execs []execStart
	seen := 0 // ExecStart= lines so far, resets included
	for _, name := range files {
		b, err := readFile(fsys, name)
		if err != nil {
			return nil, err
		}
		if b == nil {
			continue
		}
		cfg.Files = append(cfg.Files, nodePath(name))
		if execs, err = parseExecStarts(nodePath(name), b, execs, &seen); err != nil {
			return nil, err
		}
	}
	if len(execs) == 0 {
		return cfg, nil
	}
	if len(execs) > 1 {
		cfg.Notes = append(cfg.Notes, fmt.Sprintf("%s: %d ExecStart= lines without a reset (an empty ExecStart=); "+
			"systemd refuses that for a Type=simple service; the last one was read", execs[len(execs)-1].at.Path, len(execs)))
	}
	last := execs[len(execs)-1]
	cfg.ExecStart = &last.at
	if v, i, ok := flagValue(last.args, criDockerdFlag); ok {
		at := found{Value: v, Path: last.at.Path, Line: last.ll.lineAt(last.args[i].off), Key: "ExecStart --" + criDockerdFlag}
		cfg.PauseImage = &at
		if strings.Contains(v, "$") {
			cfg.Notes = append(cfg.Notes, fmt.Sprintf("%s: --%s=%s uses an environment variable, which sandboxpin does not expand",
				at.origin(), criDockerdFlag, v))
		}
	}
	return cfg, nil
}

// execStart is one ExecStart= of a unit file.
type execStart struct {
	at   found
	ll   logicalLine
	args []word
}

// parseExecStarts applies the ExecStart= lines of one unit file (or drop-in)
// in its [Service] section to execs. seen counts the ExecStart= lines of the
// unit, against maxExecStarts.
func parseExecStarts(path string, b []byte, execs []execStart, seen *int) ([]execStart, error) {
	section := ""
	for ll := range logicalLines(b) {
		t := strings.TrimSpace(ll.text)
		switch {
		case t == "" || t[0] == '#' || t[0] == ';':
			continue
		case t[0] == '[':
			if !strings.HasSuffix(t, "]") {
				return nil, configErr(path, "", ll.line, fmt.Errorf("section header %q lacks a closing ]", t))
			}
			section = t[1 : len(t)-1]
			continue
		}
		key, val, ok := strings.Cut(t, "=")
		if !ok || section != "Service" || strings.TrimSpace(key) != "ExecStart" {
			continue // systemd ignores (and logs) lines that are not assignments
		}
		if *seen++; *seen > maxExecStarts {
			return nil, configErr(path, "ExecStart", ll.line, fmt.Errorf("%w: more than %d ExecStart= lines in the unit and its drop-ins",
				ErrLimit, maxExecStarts))
		}
		val = strings.TrimSpace(val)
		if val == "" {
			execs = execs[:0]
			continue
		}
		base := strings.Index(ll.text, "=") + 1
		base += len(ll.text[base:]) - len(strings.TrimLeft(ll.text[base:], " \t"))
		// Strip ExecStart's special prefixes: @ - : + ! !!.
		cmd := strings.TrimLeft(val, "@-:+!")
		base += len(val) - len(cmd)
		args, at, err := splitWords(cmd, base)
		if err != nil {
			return nil, configErr(path, "ExecStart", ll.lineAt(at), err)
		}
		if len(args) == 0 {
			continue
		}
		execs = append(execs, execStart{
			at:   found{Value: val, Path: path, Line: ll.line, Key: "ExecStart"},
			ll:   ll,
			args: args,
		})
	}
	return execs, nil
}
