package remedy

import (
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/sandboxpin/sandboxpin/resolve"
)

// The places the runtime's command line may move (resolve's
// Result.RuntimeCommand): the plan adds a setting where the runtime reads
// it, not where it would read it without the command line.

// containerdConfigPath is the node path of the config containerd reads:
// the file its command line's --config names, else the default.
func (p *planner) containerdConfigPath() string {
	if rc := p.res.RuntimeCommand; rc != nil && rc.Config != nil && strings.HasPrefix(rc.Config.Value, "/") {
		return path.Clean(rc.Config.Value)
	}
	return "/etc/containerd/config.toml"
}

// crioDropInDir is the node path of the drop-in directory CRI-O reads:
// the one its command line's --config-dir names, else the default; "" when
// that names none (an empty --config-dir).
func (p *planner) crioDropInDir() string {
	if rc := p.res.RuntimeCommand; rc != nil && rc.ConfigDir != nil {
		if !strings.HasPrefix(rc.ConfigDir.Value, "/") {
			return ""
		}
		return path.Clean(rc.ConfigDir.Value)
	}
	return "/etc/crio/crio.conf.d"
}

// editPauseFlag changes k3s's or RKE2's pause-image, from which they
// write the containerd config f names at every start, to f.To where it is
// stated (resolve's RuntimeCommand.PauseImage: the command line's
// --pause-image, else config.yaml or a config.yaml.d file): the line of a
// unit under /etc, of an environment file or of a config file in place, a
// packaged unit's ExecStart through a drop-in. It reports false when
// nothing states it (k3s's built-in default).
func (p *planner) editPauseFlag(f resolve.Fix, prog string) (bool, error) {
	rc := p.res.RuntimeCommand
	if rc == nil || rc.PauseImage == nil {
		return false, nil
	}
	s := rc.PauseImage
	at := resolve.Fix{Answers: f.Answers, Location: s.Location, From: s.Value, To: f.To,
		Message: fmt.Sprintf("%s writes %s from its pause-image at %s at every start: set it to %s", prog, f.Path, s.Origin(), f.To)}
	if s.Value == f.To {
		return true, nil
	}
	return true, p.editSetting(at, "containerd")
}

// editSetting writes f.To in place of f.From at a setting of a command
// line, f's place: in a packaged unit (under /lib, /usr/lib or
// /usr/local/lib) an ExecStart= through editValue's drop-in, an
// Environment= through a drop-in that assigns the variable again; any other
// file in place. A value it cannot change exactly is a step for a person.
func (p *planner) editSetting(f resolve.Fix, comp resolve.Component) error {
	if isPackageUnit(f.Path) && f.Key != "ExecStart" {
		return p.overrideEnvironment(f, comp)
	}
	if isPackageUnit(f.Path) {
		return p.overrideExecStart(f, comp, func(t *text) (hunk, error) { return t.replaceValue(1, f.Flag, f.From, f.To) })
	}
	fl, err := p.open(f.Path, comp)
	if err != nil {
		return err
	}
	h, err := fl.t.replaceValue(f.Line, f.Flag, f.From, f.To)
	if err != nil && f.Flag != "" {
		// The flag quoted on its own line ('--pause-image' \), its
		// value on line f.Line: the value alone.
		h, err = fl.t.replaceValue(f.Line, "", f.From, f.To)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", f.Where(), err) // ErrUnsupported: For makes it a step for a person
	}
	fl.change(f.Answers, f.Location, h, f.Message).To = f.To
	p.sandboxChange(f, comp)
	return nil
}

// overrideEnvironment assigns the variable f.Key anew, its value with
// f.From replaced by f.To, in a drop-in of /etc/systemd/system for the
// packaged unit at f.Path, named to sort after its other drop-ins there
// (an Environment= in a later file overrides an earlier one's,
// systemd.exec(5)).
func (p *planner) overrideEnvironment(f resolve.Fix, comp resolve.Component) error {
	unit := path.Base(f.Path)
	if strings.HasSuffix(path.Dir(f.Path), ".d") {
		unit = strings.TrimSuffix(path.Base(path.Dir(f.Path)), ".d")
	}
	b, err := fs.ReadFile(p.root, strings.TrimPrefix(f.Path, "/"))
	if err != nil {
		return err
	}
	t := splitText(b)
	v := ""
	if f.Line >= 1 && f.Line <= len(t.lines) {
		line, _ := t.body(f.Line)
		for _, w := range strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "Environment=")) {
			if k, val, ok := strings.Cut(strings.Trim(w, `"'`), "="); ok && k == f.Key {
				v = val
			}
		}
	}
	if v == "" || !strings.Contains(v, f.From) || strings.ContainsAny(v, `"'\ `) {
		return fmt.Errorf("%s: %w: %s is not assigned %s as a plain word", f.Where(), ErrUnsupported, f.Key, f.From)
	}
	np, err := p.lastDropIn("/etc/systemd/system/"+unit+".d", "90-sandboxpin.conf")
	if err != nil {
		return err
	}
	fl, err := p.create(np, comp)
	if err != nil {
		return err
	}
	fl.change(f.Answers, resolve.Location{Key: f.Key}, hunk{repl: []string{
		"# Written by sandboxpin fix: " + f.Key + " of " + f.Path + ", which its package owns.\n",
		"[Service]\n", "Environment=" + f.Key + "=" + strings.Replace(v, f.From, f.To, 1) + "\n"}}, f.Message)
	p.sandboxChange(f, comp)
	return nil
}
