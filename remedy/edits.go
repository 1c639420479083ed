package remedy

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/sandboxpin/sandboxpin/resolve"
)

// isIgnoredSandboxKey reports a fix of containerd's version 2 key in a
// file whose version 3 or 4 reads pinned_images.sandbox instead.
func isIgnoredSandboxKey(f resolve.Fix) bool {
	return f.Answers == resolve.KindConfigMistake && f.Key == v2SandboxKey && f.From != ""
}

// The keys of containerd's sandbox image: version 1 and 2 files (any
// quoting of the plugin's name), and version 3 and 4.
const v2SandboxKey = `plugins."io.containerd.grpc.v1.cri".sandbox_image`

var (
	v1Table = []string{"plugins", "cri"}
	v2Table = []string{"plugins", "io.containerd.grpc.v1.cri"}
	v3Table = []string{"plugins", "io.containerd.cri.v1.images", "pinned_images"}
)

// editValue writes f.To in place of f.From at f's place: in the line
// itself, or, for a command line in a unit of the package's under /lib or
// /usr/lib, in a drop-in of /etc/systemd/system that overrides it.
func (p *planner) editValue(f resolve.Fix) error {
	comp := p.component(f.Path)
	if rc := p.res.RuntimeCommand; rc != nil && rc.PauseImage != nil && rc.PauseImage.Location == f.Location {
		return p.editSetting(f, comp)
	}
	if isPackageUnit(f.Path) && f.Key == "ExecStart" {
		return p.overrideExecStart(f, comp, func(t *text) (hunk, error) { return t.replaceValue(1, f.Flag, f.From, f.To) })
	}
	if generated(f.Path) != "" {
		return p.editGenerated(f)
	}
	fl, err := p.open(f.Path, comp)
	if err != nil {
		return err
	}
	h, err := fl.t.replaceValue(f.Line, f.Flag, f.From, f.To)
	if err != nil {
		return fmt.Errorf("%s: %w", f.Where(), err)
	}
	fl.change(f.Answers, f.Location, h, f.Message).To = f.To
	p.sandboxChange(f, comp)
	return nil
}

// sandboxChange notes that f changes the runtime's configured sandbox
// image to f.To.
func (p *planner) sandboxChange(f resolve.Fix, comp resolve.Component) {
	if comp == resolve.Component(p.res.Runtime) && f.From == p.res.SandboxImage && p.sandbox == "" {
		p.sandbox, p.answers = f.To, f.Answers
	}
}

// moveSandbox moves the value of containerd's version 2 key, which the
// file's version ignores (or, on 2.3 and later, migrates over the new
// key), to pinned_images.sandbox of the same file.
func (p *planner) moveSandbox(f resolve.Fix) error {
	fl, err := p.open(f.Path, "containerd")
	if err != nil {
		return err
	}
	rm, err := fl.t.removeLine(f.Line, f.From)
	if err != nil {
		return fmt.Errorf("%s: %w", f.Where(), err)
	}
	if f.From != p.res.SandboxImage {
		// Not the image in use (containerd reads another key): moving
		// it would change that image; the key goes.
		fl.change(f.Answers, f.Location, rm, "remove "+f.Key+", which this version of the file does not read; the sandbox image in use, "+
			p.res.SandboxImage+", stays")
		return nil
	}
	set, err := fl.t.setTOML(v3Table, "sandbox", f.From)
	if err != nil {
		return fmt.Errorf("%s: %w", f.Path, err)
	}
	fl.change(f.Answers, f.Location, rm, "remove "+f.Key+", which this version of the file does not read")
	fl.change(f.Answers, resolve.Location{Key: `plugins."io.containerd.cri.v1.images".pinned_images.sandbox`, Line: set.start + 1}, set,
		"set pinned_images.sandbox to "+f.From+", the value of "+f.Key).To = f.From
	return nil
}

// addSandbox configures the sandbox image f.To where the runtime's
// configuration does not state it (the runtime uses its built-in
// default): containerd's main config, a CRI-O drop-in that sorts last, or
// a cri-dockerd drop-in.
func (p *planner) addSandbox(f resolve.Fix) error {
	rt := resolve.Component(p.res.Runtime)
	switch rt {
	case "containerd":
		np := p.containerdConfigPath()
		fl, err := p.open(np, rt)
		if errors.Is(err, fs.ErrNotExist) {
			fl, err = p.create(np, rt)
			if err == nil {
				fl.t = splitText([]byte("version = 2\n"))
			}
		}
		if err != nil {
			return err
		}
		// The key containerd reads for the file's version
		// (pkg/cri/config and the v1 "cri" plugin ID at v1.7.35;
		// version 3 and 4 at v2.4.2): resolve/internal/config reads the same.
		table, key := v2Table, "sandbox_image"
		switch v := containerdVersion(fl.t); {
		case v == 1:
			table = v1Table
		case v >= 3:
			table, key = v3Table, "sandbox"
		}
		h, err := fl.t.setTOML(table, key, f.To)
		if err != nil {
			return fmt.Errorf("%s: %w", np, err)
		}
		loc := resolve.Location{Key: strings.Join(quoteKeys(table), ".") + "." + key}
		if fl.create {
			// The whole new file: "version = 2", then the table.
			h, fl.t = hunk{repl: h.repl}, splitText(nil)
		}
		fl.change(f.Answers, loc, h, f.Message).To = f.To
	case "cri-o":
		dir := p.crioDropInDir()
		if dir == "" {
			p.manual(f)
			return nil
		}
		np, err := p.lastDropIn(dir, "99-sandboxpin.conf")
		if err != nil {
			return err
		}
		fl, err := p.create(np, rt)
		if err != nil {
			return err
		}
		fl.change(f.Answers, resolve.Location{Key: "crio.image.pause_image"},
			hunk{repl: []string{"# Written by sandboxpin fix: the sandbox image, after every other drop-in.\n", "[crio.image]\n", "pause_image = " + tomlQuote(f.To, false) + "\n"}}, f.Message).To = f.To
	case "cri-dockerd":
		unit, err := p.findUnit("cri-docker.service")
		if err != nil {
			p.manual(f)
			return nil //nolint:nilerr // no unit to override: by hand
		}
		if err := p.overrideExecStart(resolve.Fix{Answers: f.Answers, Location: resolve.Location{Path: unit.path, Key: "ExecStart"}, To: f.To, Message: f.Message}, rt,
			appendToCommand("--pod-infra-container-image="+f.To)); err != nil {
			return err
		}
	default:
		p.manual(f)
		return nil
	}
	p.sandbox, p.answers = f.To, f.Answers
	return nil
}

// quoteKeys quotes the keys of a dotted TOML key that need it.
func quoteKeys(keys []string) []string {
	var out []string
	for _, k := range keys {
		if strings.ContainsAny(k, ".") {
			k = `"` + k + `"`
		}
		out = append(out, k)
	}
	return out
}

// containerdVersion is the version = N of a containerd config, 1 when it
// states none (containerd reads such a file as version 1).
func containerdVersion(t *text) int {
	for i := range t.lines {
		b, _ := t.body(i + 1)
		if _, ok := tomlHeader(b); ok {
			break
		}
		if keys, rest, ok := tomlKeys(strings.TrimSpace(b), '='); ok && equalKeys(keys, []string{"version"}) {
			var n int
			if _, err := fmt.Sscan(strings.TrimSpace(stripComment(rest)), &n); err == nil {
				return n
			}
		}
	}
	return 1
}

// lastDropIn returns the node path of a new drop-in in dir named name, or,
// when a drop-in there sorts after name, a name that sorts after it.
func (p *planner) lastDropIn(dir, name string) (string, error) {
	entries, err := fs.ReadDir(p.root, strings.TrimPrefix(dir, "/"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	for _, e := range entries {
		if e.Name() >= name {
			name = e.Name() + "-" + name
		}
	}
	return dir + "/" + name, nil
}

// remove removes a flag from a command line or from kubeadm's
// kubeletExtraArgs, or a key's line.
func (p *planner) remove(f resolve.Fix) error {
	comp := p.component(f.Path)
	if f.Path == "" || generated(f.Path) != "" {
		p.manual(f)
		return nil
	}
	if isPackageUnit(f.Path) && f.Key == "ExecStart" && f.Flag != "" {
		return p.overrideExecStart(f, comp, func(t *text) (hunk, error) { return t.removeFlag(1, f.Flag, f.From) })
	}
	fl, err := p.open(f.Path, comp)
	if err != nil {
		return err
	}
	var h hunk
	switch {
	case f.Flag != "" && strings.HasSuffix(f.Key, "kubeletExtraArgs"):
		h, err = fl.t.removeYAMLArg(f.Line, strings.TrimLeft(f.Flag, "-"), f.From)
	case f.Flag != "":
		h, err = fl.t.removeFlag(f.Line, f.Flag, f.From)
	default:
		h, err = fl.t.removeLine(f.Line, f.From)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", f.Where(), err)
	}
	fl.change(f.Answers, f.Location, h, f.Message)
	return nil
}

// addFlag adds f.Flag=f.To to the end of a unit's command line: the
// ExecStart at f's place, else the one a candidate of cri-dockerd's flags
// was read from, else the package's unit through a drop-in.
func (p *planner) addFlag(f resolve.Fix) error {
	if f.Flag == "" || f.To == "" {
		p.manual(f)
		return nil
	}
	if f.Path == "" {
		for _, c := range p.res.Candidates {
			if c.Source == resolve.SourceCRIDockerdFlags && c.Key == "ExecStart" {
				f.Path, f.Line, f.Key = c.Path, c.Line, c.Key
			}
		}
	}
	comp := resolve.ComponentCRIDockerd
	if f.Path == "" {
		unit, err := p.findUnit("cri-docker.service")
		if err != nil {
			p.manual(f)
			return nil //nolint:nilerr // no unit: by hand
		}
		f.Path, f.Key = unit.path, "ExecStart"
	}
	if isPackageUnit(f.Path) {
		return p.overrideExecStart(f, comp, appendToCommand(f.Flag+"="+f.To))
	}
	fl, err := p.open(f.Path, comp)
	if err != nil {
		return err
	}
	// The last line of the command that line f.Line is part of.
	n := f.Line
	for n >= 1 && n <= len(fl.t.lines) {
		b, _ := fl.t.body(n)
		if !strings.HasSuffix(strings.TrimRight(b, " \t"), `\`) {
			break
		}
		n++
	}
	if n < 1 || n > len(fl.t.lines) {
		return fmt.Errorf("%s: %w: no command line at line %d", f.Path, ErrChanged, f.Line)
	}
	b, end := fl.t.body(n)
	fl.change(f.Answers, f.Location, hunk{start: n - 1, n: 1, repl: []string{b + " " + f.Flag + "=" + f.To + end}}, f.Message).To = f.To
	return nil
}

// isPackageUnit reports a systemd unit file a package owns, which an
// upgrade of the package overwrites.
func isPackageUnit(np string) bool {
	return strings.HasPrefix(np, "/lib/systemd/system/") || strings.HasPrefix(np, "/usr/lib/systemd/system/") ||
		strings.HasPrefix(np, "/usr/local/lib/systemd/system/") // an install script's (RKE2's, containerd's getting-started)
}

// generated returns "k3s" or "rke2" for the containerd config that k3s or
// RKE2 write anew at every start from a template and their pause-image
// setting, "" for any other file.
func generated(np string) string {
	for _, prog := range []string{"k3s", "rke2"} {
		if strings.HasPrefix(np, "/var/lib/rancher/"+prog+"/agent/etc/containerd/") {
			return prog
		}
	}
	return ""
}

// editGenerated changes the sandbox image of k3s's or RKE2's containerd
// config at what they write it from, and in the written file (so that the
// node is right until the next start, and is checked as it will be):
//   - a user template beside it (config-v3.toml.tmpl, else
//     config.toml.tmpl: the first found replaces the built-in template
//     whole) that states the value: in place there;
//   - else their pause-image where it is stated (editPauseFlag): the
//     command line's --pause-image, which wins over every config file, else
//     the config.yaml or config.yaml.d file that sets it;
//   - else the pause-image setting, in a config.yaml.d drop-in that sorts
//     after the others (later files win, key by key).
//
// k3s: pkg/agent/containerd/config.go (the templates, in that order),
// pkg/cli/cmds/agent.go ("pause-image", which the built-in template writes
// as pinned_images.sandbox or sandbox_image) and pkg/configfilearg (config.yaml
// then config.yaml.d/*.yaml in name order) at main 469d009fb2b4; RKE2:
// pkg/cli/cmds/root.go ("pause-image", k3s's dropped) at v1.36.3+rke2r1,
// with k3s's template and config files under its own name.
func (p *planner) editGenerated(f resolve.Fix) error {
	prog := generated(f.Path)
	dir := path.Dir(f.Path)
	fl, err := p.open(f.Path, "containerd")
	if err != nil {
		return err
	}
	h, err := fl.t.replaceValue(f.Line, f.Flag, f.From, f.To)
	if err != nil {
		return fmt.Errorf("%s: %w", f.Where(), err)
	}
	fl.change(f.Answers, f.Location, h, f.Message+" (until "+prog+" writes the file again at its next start)").To = f.To
	p.sandboxChange(f, "containerd")
	for _, name := range []string{"config-v3.toml.tmpl", "config.toml.tmpl"} {
		tp := dir + "/" + name
		tf, err := p.open(tp, "containerd")
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		for i := range tf.t.lines {
			if h, err := tf.t.replaceValue(i+1, "", f.From, f.To); err == nil {
				tf.change(f.Answers, resolve.Location{Line: i + 1}, h, fmt.Sprintf("%s writes %s from its template %s: set the sandbox image there too", prog, f.Path, tp)).To = f.To
				return nil
			}
		}
		p.manual(resolve.Fix{Answers: f.Answers, Location: resolve.Location{Path: tp}, Message: fmt.Sprintf(
			"%s writes %s from its template %s, which does not state %s: make it write %s (its .NodeConfig.AgentConfig.PauseImage is %s's pause-image)", prog, f.Path, tp, f.From, f.To, prog)})
		return nil
	}
	if ok, err := p.editPauseFlag(f, prog); ok || err != nil {
		return err
	}
	np, err := p.lastDropIn("/etc/rancher/"+prog+"/config.yaml.d", "90-sandboxpin.yaml")
	if err != nil {
		return err
	}
	df, err := p.create(np, "containerd")
	if err != nil {
		return err
	}
	df.change(f.Answers, resolve.Location{Key: "pause-image"}, hunk{repl: []string{
		"# Written by sandboxpin fix: " + prog + " writes " + f.Path + "'s sandbox image from pause-image\n",
		"# (a --pause-image on " + prog + "'s command line wins over this file).\n",
		"pause-image: \"" + f.To + "\"\n"}}, fmt.Sprintf("%s writes %s anew at every start: set its pause-image to %s", prog, f.Path, f.To)).To = f.To
	return nil
}

// unitFile is a unit found on the node.
type unitFile struct{ path string }

// findUnit returns the unit file of name, where systemd looks first.
func (p *planner) findUnit(name string) (unitFile, error) {
	for _, dir := range []string{"/etc/systemd/system/", "/usr/lib/systemd/system/", "/lib/systemd/system/"} {
		if fi, err := fs.Stat(p.root, strings.TrimPrefix(dir+name, "/")); err == nil && fi.Mode().IsRegular() {
			return unitFile{dir + name}, nil
		}
	}
	return unitFile{}, fs.ErrNotExist
}

// appendToCommand returns an edit of a command line that adds word at its
// end.
func appendToCommand(word string) func(*text) (hunk, error) {
	return func(t *text) (hunk, error) {
		n := len(t.lines)
		b, end := t.body(n)
		return hunk{start: n - 1, n: 1, repl: []string{b + " " + word + end}}, nil
	}
}

// overrideExecStart writes a drop-in /etc/systemd/system/UNIT.d/90-sandboxpin.conf
// that resets ExecStart and sets it to the unit's command line at f.Path
// (its continuation lines kept) as edit changes it. An error wraps
// [ErrUnsupported] when edit cannot make its change.
func (p *planner) overrideExecStart(f resolve.Fix, comp resolve.Component, edit func(*text) (hunk, error)) error {
	unitPath := f.Path
	if strings.Contains(path.Dir(unitPath), ".service.d") {
		unitPath = strings.TrimSuffix(path.Dir(unitPath), ".d")
	}
	unit := path.Base(unitPath)
	b, err := fs.ReadFile(p.root, strings.TrimPrefix(f.Path, "/"))
	if err != nil {
		return err
	}
	cmd, ok := lastExecStart(string(b))
	if !ok {
		return fmt.Errorf("%s: %w: no command line in ExecStart as written", f.Where(), ErrUnsupported)
	}
	t := splitText([]byte(cmd))
	h, err := edit(t)
	if err != nil {
		return fmt.Errorf("%s: %w", f.Where(), err)
	}
	out, err := t.apply([]hunk{h})
	if err != nil {
		return fmt.Errorf("%s: %w", f.Where(), err)
	}
	np := "/etc/systemd/system/" + unit + ".d/90-sandboxpin.conf"
	fl, err := p.create(np, comp)
	if err != nil {
		return err
	}
	fl.change(f.Answers, resolve.Location{Key: "ExecStart", Flag: f.Flag}, hunk{repl: []string{
		"# Written by sandboxpin fix: " + unit + "'s command line from " + f.Path + ", which its package owns.\n",
		"[Service]\n", "ExecStart=\n", "ExecStart=" + string(out)}}, f.Message).To = f.To
	p.sandboxChange(f, comp)
	return nil
}

// lastExecStart returns the last non-empty ExecStart= command line of a
// unit file, its continuation lines joined with their backslashes, ending
// in "\n".
func lastExecStart(s string) (string, bool) {
	t := splitText([]byte(s))
	cmd, found := "", false
	for i := 1; i <= len(t.lines); i++ {
		b, _ := t.body(i)
		v, ok := strings.CutPrefix(strings.TrimSpace(b), "ExecStart=")
		if !ok {
			continue
		}
		for strings.HasSuffix(strings.TrimRight(b, " \t"), `\`) && i < len(t.lines) {
			i++
			b, _ = t.body(i)
			v += "\n" + b
		}
		if strings.TrimSpace(v) != "" {
			cmd, found = v+"\n", true
		}
	}
	return cmd, found
}
