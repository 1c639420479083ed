package remedy

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/sandboxpin/sandboxpin/audit"
	"github.com/sandboxpin/sandboxpin/resolve"
)

// Plan is the remedy of one node, as data: the file edits, then the steps
// that no file edit answers. The zero Plan is a node that needs nothing.
type Plan struct {
	// Edits are the files to change, one Edit a file, in the order of
	// the fixes they answer.
	Edits []Edit `json:"edits"`
	// Steps are the rest, in the order to take them: storing the image
	// under a new configured name before the restarts, the restarts of
	// what reads the edited files, then upgrades, shims and edits that
	// need a person.
	Steps []Step `json:"steps"`
	// Result and Verdict are what the plan was made from: the node as
	// resolved, and as judged (nil when its images were not known).
	Result  *resolve.Result `json:"result"`
	Verdict *audit.Verdict  `json:"verdict,omitempty"`
}

// Empty reports whether the node needs nothing: no edit and no step.
func (p *Plan) Empty() bool { return p == nil || len(p.Edits) == 0 && len(p.Steps) == 0 }

// Remains reports whether a step is left that no file edit answers and
// that a restart does not take: an upgrade, a shim, an edit by hand, or a
// pull not yet done (alternatives aside).
func (p *Plan) Remains() bool {
	for _, s := range p.Steps {
		if s.Action != resolve.ActionRestart && !s.Done && !s.Alternative {
			return true
		}
	}
	return false
}

// Edit is the change of one file.
type Edit struct {
	// Path is the node path of the file ("/etc/containerd/config.toml").
	Path string `json:"path"`
	// Create says the file is new (a drop-in the plan adds).
	Create bool `json:"create,omitempty"`
	// Component is what reads the file: "containerd", "cri-o",
	// "cri-dockerd", "kubelet" or "kubeadm".
	Component resolve.Component `json:"component"`
	// Changes are the values or lines changed, each with the findings it
	// answers.
	Changes []Change `json:"changes"`
	// Diff is the unified diff of the file, its paths relative to the root
	// ("a/etc/…", "b/etc/…": `patch -p1 -d ROOT` applies it).
	Diff string `json:"diff"`
	// Hash is "sha256:" and the hex SHA-256 of Before, the file as
	// planned; Apply refuses a file that no longer has it. "" for a new
	// file, which Apply refuses to overwrite.
	Hash string `json:"hash,omitempty"`
	// Changed says that Apply wrote the file.
	Changed bool `json:"changed"`
	// Before and After are the whole file before and after the edit.
	Before []byte `json:"-"`
	After  []byte `json:"-"`
}

// Change is one value or line of an [Edit].
type Change struct {
	// Answers are the kinds of the findings the change answers.
	Answers []resolve.Kind `json:"answers"`
	// Location is where the value was, in the file before the edit
	// (flattened into the JSON object); Line is that of the first line
	// replaced, or of the line after which lines are added.
	resolve.Location
	// Before and After are the lines replaced and their replacement,
	// with their line endings; "" for none.
	Before string `json:"before"`
	After  string `json:"after"`
	// Message says it for people.
	Message string `json:"message"`
}

// Step is an action of the plan that is not a file edit.
type Step struct {
	// Action is [resolve.ActionPull] (store the image under Image),
	// [resolve.ActionRestart] (restart Unit so that it reads its files),
	// [resolve.ActionLabel] (label the image stored as Image so that the
	// runtime pins it), [resolve.ActionUpgrade], [resolve.ActionShim], or
	// [resolve.ActionEdit] (an edit the plan cannot make: Message says it).
	Action resolve.Action `json:"action"`
	// Answers is the kind of the finding the step answers, "" for a
	// restart.
	Answers resolve.Kind `json:"answers,omitempty"`
	// Component is the runtime, "kubelet" or "kubeadm".
	Component resolve.Component `json:"component,omitempty"`
	// Unit is the systemd unit to restart.
	Unit string `json:"unit,omitempty"`
	// Image is the name to store the image under, for a pull, or to
	// label, for a label; From a
	// name it is stored under already, to tag on a node that cannot pull.
	Image string `json:"image,omitempty"`
	From  string `json:"from,omitempty"`
	// Version is the least version to upgrade Component to.
	Version string `json:"version,omitempty"`
	// Commands are the commands that take the step, alternatives one a
	// line (a pull through CRI, then the tag of the stored image).
	Commands []string `json:"commands,omitempty"`
	// Done says the step was taken (a pull through CRI by the command).
	Done bool `json:"done,omitempty"`
	// Alternative says the step answers a finding that an edit or a step
	// before it answers already: another way, for a node where that one
	// cannot be taken (a label where the config can be edited).
	Alternative bool `json:"alternative,omitempty"`
	// Message says it for people.
	Message string `json:"message"`
}

// For plans the remedy of the node whose files are root, resolved as res
// and judged as v (nil when the runtime's images are not known: the plan
// then answers res.Fixes only). Every fix with a place in a file becomes an
// edit that changes only the bytes of its value or line; a change of the
// configured sandbox image comes with the step that stores the image under
// the new name. An error wraps [ErrChanged] when a file does not hold what
// res says it does (it changed since res was resolved), and is a
// *fs.PathError when a file cannot be read.
//
// Check the plan with [Verify] before applying it.
func For(res *resolve.Result, v *audit.Verdict, root fs.FS) (*Plan, error) {
	if res == nil || root == nil {
		return nil, errors.New("remedy: nil result or root")
	}
	p := &planner{res: res, v: v, root: root, files: map[string]*file{}}
	fixes := res.Fixes
	if v != nil {
		fixes = v.Fixes
	}
	for _, f := range fixes {
		if err := p.fix(f); err != nil {
			return nil, err
		}
	}
	return p.finish()
}

// planner builds one Plan.
type planner struct {
	res   *resolve.Result
	v     *audit.Verdict
	root  fs.FS
	files map[string]*file
	order []string
	steps []Step
	// sandbox is the configured sandbox image after the edits, "" when
	// they do not change it.
	sandbox string
	answers resolve.Kind // what changed sandbox answers
	// required is the image whose label no edit makes unneeded
	// (labelOn1x).
	required string
}

// file is one file being edited.
type file struct {
	path      string
	component resolve.Component
	create    bool
	before    []byte
	t         *text
	hunks     []hunk
	changes   []Change
}

// open returns the file at the node path p, read from the root.
func (p *planner) open(np string, component resolve.Component) (*file, error) {
	if f, ok := p.files[np]; ok {
		return f, nil
	}
	name := strings.TrimPrefix(path.Clean(np), "/")
	fi, err := fs.Stat(p.root, name)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "edit", Path: np, Err: fmt.Errorf("%w: %s", ErrNotRegular, fi.Mode().Type())}
	}
	b, err := fs.ReadFile(p.root, name)
	if err != nil {
		return nil, err
	}
	f := &file{path: np, component: component, before: b, t: splitText(b)}
	p.files[np] = f
	p.order = append(p.order, np)
	return f, nil
}

// create returns a new file at the node path np, refused when one is
// there.
func (p *planner) create(np string, component resolve.Component) (*file, error) {
	if f, ok := p.files[np]; ok {
		return f, nil
	}
	if _, err := fs.Stat(p.root, strings.TrimPrefix(np, "/")); err == nil {
		return nil, &fs.PathError{Op: "create", Path: np, Err: fs.ErrExist}
	}
	f := &file{path: np, component: component, create: true, t: splitText(nil)}
	p.files[np] = f
	p.order = append(p.order, np)
	return f, nil
}

// change records h on f as a change answering k at loc; the same change
// offered again (another finding with the same remedy) adds k to its
// answers, and a change of a line another change has changed already is
// left out (the first, most urgent, fix wins).
func (f *file) change(k resolve.Kind, loc resolve.Location, h hunk, msg string) {
	for i, c := range f.changes {
		if h0 := f.hunks[i]; h0.start == h.start && h0.n == h.n && slices.Equal(h0.repl, h.repl) {
			if !slices.Contains(c.Answers, k) {
				f.changes[i].Answers = append(f.changes[i].Answers, k)
			}
			return
		}
		if h0 := f.hunks[i]; h.start < h0.start+max(h0.n, 1) && h0.start < h.start+max(h.n, 1) {
			return
		}
	}
	loc.Path = f.path
	if loc.Line == 0 {
		loc.Line = h.start + 1
	}
	f.hunks = append(f.hunks, h)
	f.changes = append(f.changes, Change{Answers: []resolve.Kind{k}, Location: loc,
		Before: strings.Join(f.t.lines[h.start:h.start+h.n], ""), After: strings.Join(h.repl, ""), Message: msg})
}

// component names what reads the file at the node path np, by the source
// of a candidate read from it.
func (p *planner) component(np string) resolve.Component {
	for _, c := range p.res.Candidates {
		if c.Path != np {
			continue
		}
		switch c.Source {
		case resolve.SourceContainerdConfig:
			return "containerd"
		case resolve.SourceCRIOConfig:
			return "cri-o"
		case resolve.SourceCRIDockerdFlags:
			return "cri-dockerd"
		case resolve.SourceKubeletFlags:
			return "kubelet"
		case resolve.SourceKubeadmConfig:
			return "kubeadm"
		}
	}
	switch {
	case strings.HasPrefix(np, "/etc/crio/"):
		return "cri-o"
	case strings.Contains(np, "containerd"):
		return "containerd"
	case strings.Contains(np, "cri-docker"):
		return "cri-dockerd"
	case strings.Contains(np, "kubelet"):
		return "kubelet"
	}
	return resolve.Component(p.res.Runtime)
}

// fix plans one fix.
func (p *planner) fix(f resolve.Fix) error {
	switch f.Action {
	case resolve.ActionEdit:
		switch {
		case f.Path != "" && f.To != "":
			return p.editValue(f)
		case f.Path != "" && isIgnoredSandboxKey(f):
			return p.moveSandbox(f)
		case f.Path == "" && f.To != "":
			return p.addSandbox(f)
		}
		p.manual(f)
	case resolve.ActionRemove:
		return p.remove(f)
	case resolve.ActionAdd:
		return p.addFlag(f)
	case resolve.ActionPull:
		p.pull(f.Answers, f.To, f.From, f.Message)
	case resolve.ActionRestart:
		p.steps = append(p.steps, Step{Action: resolve.ActionRestart, Answers: f.Answers, Component: f.Component,
			Unit: unitOf(f.Component, p.res), Commands: []string{"systemctl restart " + unitOf(f.Component, p.res)}, Message: f.Message})
	case resolve.ActionLabel:
		p.steps = append(p.steps, Step{Action: resolve.ActionLabel, Answers: f.Answers, Component: f.Component, Image: f.To,
			Commands: []string{p.labelCommand(f.To)}, Message: f.Message})
	default: // upgrade, shim
		p.steps = append(p.steps, Step{Action: f.Action, Answers: f.Answers, Component: f.Component, Version: f.Version, Message: f.Message})
	}
	return nil
}

// labelCommand is the command that labels the image containerd stores as
// name with containerd's pinned label (PinnedImageLabelKey and
// PinnedImageLabelValue, pkg/cri/labels/labels.go @v1.7.35 and
// internal/cri/labels/labels.go @v2.4.2; see resolve's
// ContainerdPinnedLabel release fact). Where k3s or RKE2 write the
// containerd config, it runs their ctr and also removes their own pinned
// label, which they clear containerd's with at every start
// (resolve.Result.LabelFix).
func (p *planner) labelCommand(name string) string {
	const label = "io.cri-containerd.pinned=pinned"
	for _, c := range p.res.Candidates {
		if prog := generated(c.Path); prog != "" && c.Source == resolve.SourceContainerdConfig {
			ctr := prog + " ctr" // k3s's own subcommand finds its socket
			if prog == "rke2" {
				// RKE2's documentation, "Debugging".
				ctr = "/var/lib/rancher/rke2/bin/ctr --address /run/k3s/containerd/containerd.sock"
			}
			return ctr + " -n k8s.io images label " + name + " " + label + " io.cattle." + prog + ".pinned="
		}
	}
	return "ctr -n k8s.io images label " + name + " " + label
}

// manual records a fix the plan cannot make as an edit by hand.
func (p *planner) manual(f resolve.Fix) {
	p.steps = append(p.steps, Step{Action: resolve.ActionEdit, Answers: f.Answers, Component: p.component(f.Path), Message: f.Message})
}

// isIgnoredSandboxKey reports a fix of containerd's version 2 key in a
// file whose version 3 or 4 reads pinned_images.sandbox instead.
func isIgnoredSandboxKey(f resolve.Fix) bool {
	return f.Answers == resolve.KindConfigMistake && f.Key == v2SandboxKey && f.From != ""
}

// The keys of containerd's sandbox image: version 1 and 2 files (any
// quoting of the plugin's name), and version 3 and 4.
const v2SandboxKey = `plugins."io.containerd.grpc.v1.cri".sandbox_image`

var (
	v2Table = []string{"plugins", "io.containerd.grpc.v1.cri"}
	v3Table = []string{"plugins", "io.containerd.cri.v1.images", "pinned_images"}
)

// editValue writes f.To in place of f.From at f's place: in the line
// itself, or, for a command line in a unit of the package's under /lib or
// /usr/lib, in a drop-in of /etc/systemd/system that overrides it.
func (p *planner) editValue(f resolve.Fix) error {
	comp := p.component(f.Path)
	if isPackageUnit(f.Path) && f.Key == "ExecStart" {
		return p.overrideExecStart(f, comp, func(cmd string) (string, bool) {
			t := splitText([]byte(cmd))
			h, err := t.replaceValue(1, f.Flag, f.From, f.To)
			if err != nil {
				return "", false
			}
			return strings.Join(h.repl, ""), true
		})
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
	fl.change(f.Answers, f.Location, h, f.Message)
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
	set, err := fl.t.setTOML(v3Table, "sandbox", f.From)
	if err != nil {
		return fmt.Errorf("%s: %w", f.Path, err)
	}
	fl.change(f.Answers, f.Location, rm, "remove "+f.Key+", which this version of the file does not read")
	fl.change(f.Answers, resolve.Location{Key: `plugins."io.containerd.cri.v1.images".pinned_images.sandbox`, Line: set.start + 1}, set,
		"set pinned_images.sandbox to "+f.From+", the value of "+f.Key)
	if f.From != p.res.SandboxImage {
		p.sandbox, p.answers = f.From, f.Answers
	}
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
		np := "/etc/containerd/config.toml"
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
		table, key := v2Table, "sandbox_image"
		if containerdVersion(fl.t) >= 3 {
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
		fl.change(f.Answers, loc, h, f.Message)
	case "cri-o":
		np, err := p.lastDropIn("/etc/crio/crio.conf.d", "99-sandboxpin.conf")
		if err != nil {
			return err
		}
		fl, err := p.create(np, rt)
		if err != nil {
			return err
		}
		fl.change(f.Answers, resolve.Location{Key: "crio.image.pause_image"},
			hunk{repl: []string{"# Written by sandboxpin fix: the sandbox image, after every other drop-in.\n", "[crio.image]\n", "pause_image = " + tomlQuote(f.To, false) + "\n"}}, f.Message)
	case "cri-dockerd":
		unit, err := p.findUnit("cri-docker.service")
		if err != nil {
			p.manual(f)
			return nil //nolint:nilerr // no unit to override: by hand
		}
		return p.overrideExecStart(resolve.Fix{Answers: f.Answers, Location: resolve.Location{Path: unit.path, Key: "ExecStart"}, To: f.To, Message: f.Message}, rt,
			func(cmd string) (string, bool) {
				body := strings.TrimRight(cmd, "\r\n")
				return body + " --pod-infra-container-image=" + f.To + cmd[len(body):], true
			})
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
		return p.overrideExecStart(f, comp, func(cmd string) (string, bool) {
			t := splitText([]byte(cmd))
			h, err := t.removeFlag(1, f.Flag, f.From)
			if err != nil {
				return "", false
			}
			return strings.Join(h.repl, ""), true
		})
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
	appendFlag := func(cmd string) (string, bool) {
		body := strings.TrimRight(cmd, "\r\n")
		return body + " " + f.Flag + "=" + f.To + cmd[len(body):], true
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
		return p.overrideExecStart(f, comp, appendFlag)
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
	fl.change(f.Answers, f.Location, hunk{start: n - 1, n: 1, repl: []string{b + " " + f.Flag + "=" + f.To + end}}, f.Message)
	return nil
}

// pull records the step that stores the image under name: a pull through
// CRI, or, where the same image is stored under another spelling from (a
// registry alias or Docker Hub form of name), a tag of it with the
// runtime's own tool.
func (p *planner) pull(k resolve.Kind, name, from, msg string) {
	for _, s := range p.steps {
		if s.Action == resolve.ActionPull && s.Image == name {
			return
		}
	}
	s := Step{Action: resolve.ActionPull, Answers: k, Component: resolve.Component(p.res.Runtime), Image: name, From: from,
		Commands: []string{"crictl pull " + name}, Message: msg}
	if from != "" && !p.res.Aliases().Equal(from, name) {
		from = "" // another image: a tag would give it a name it does not have
	}
	s.From = from
	if from != "" {
		tag := map[string]string{"containerd": "ctr -n k8s.io images tag", "cri-o": "podman tag", "cri-dockerd": "docker tag"}[string(p.res.Runtime)]
		if tag != "" {
			s.Commands = append(s.Commands, tag+" "+from+" "+name)
		}
	}
	if msg == "" {
		s.Message = fmt.Sprintf("store the sandbox image under %s before %s restarts: it looks the image up by the name as configured", name, p.res.Runtime)
		if from != "" {
			s.Message += fmt.Sprintf("; a node that cannot pull tags the stored %s", from)
		}
	}
	p.steps = append(p.steps, s)
}

// stored reports whether the runtime lists an image under exactly name.
func (p *planner) stored(name string) bool {
	if p.v == nil {
		return false
	}
	for _, img := range p.v.Images {
		if img.Name == name {
			return true
		}
	}
	return false
}

// storedAs is a name the sandbox image is stored under, "" when unknown.
func (p *planner) storedAs() string {
	if p.v == nil {
		return ""
	}
	if p.v.Sandbox.StoredAs != "" {
		return p.v.Sandbox.StoredAs
	}
	if p.v.Sandbox.Present {
		return p.res.SandboxImage
	}
	return ""
}

// finish adds the pull and restart steps and builds the Plan.
func (p *planner) finish() (*Plan, error) {
	plan := &Plan{Edits: []Edit{}, Steps: []Step{}, Result: p.res, Verdict: p.v}
	restarts := map[resolve.Component]bool{}
	var reload []resolve.Component
	for _, np := range p.order {
		f := p.files[np]
		if len(f.hunks) == 0 {
			continue
		}
		after, err := f.t.apply(f.hunks)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", np, err)
		}
		e := Edit{Path: np, Create: f.create, Component: f.component, Changes: f.changes,
			Diff: unified(np, f.t, f.hunks, f.create), Before: f.before, After: after}
		if !f.create {
			e.Hash = hashOf(f.before)
		}
		plan.Edits = append(plan.Edits, e)
		if f.component != "kubeadm" {
			restarts[f.component] = true
		}
		if strings.Contains(np, "/systemd/") && !slices.Contains(reload, f.component) {
			reload = append(reload, f.component)
		}
	}
	var steps []Step
	if p.sandbox != "" && p.sandbox != p.res.SandboxImage {
		// The runtime will look up the new name: a pull of the old one
		// (an absent image) becomes the pull of the new one.
		answers := p.answers
		p.steps = slices.DeleteFunc(p.steps, func(s Step) bool {
			if s.Action == resolve.ActionPull && s.Image == p.res.SandboxImage {
				answers = s.Answers
				return true
			}
			return false
		})
		if !p.stored(p.sandbox) {
			p.pull(answers, p.sandbox, p.storedAs(), "")
		}
		p.labelOn1x(answers)
	}
	for _, s := range p.steps {
		if s.Action == resolve.ActionPull || s.Action == resolve.ActionLabel {
			steps = append(steps, s) // before the restart: a label of 1.6.22–1.6.24 and 1.7.3–1.7.9 counts only after one
		}
	}
	for _, comp := range []resolve.Component{resolve.ComponentContainerd, resolve.ComponentCRIO, resolve.ComponentCRIDockerd, resolve.ComponentKubelet} {
		if !restarts[comp] {
			continue
		}
		unit := unitOf(comp, p.res)
		cmds := []string{"systemctl restart " + unit}
		if slices.Contains(reload, comp) {
			cmds = []string{"systemctl daemon-reload && systemctl restart " + unit}
		}
		if prog, ok := strings.CutSuffix(unit, ".service"); ok && (prog == "k3s" || prog == "rke2") {
			// k3s and RKE2 run containerd: a server's unit, or an agent's.
			agent := map[string]string{"k3s": "k3s-agent.service", "rke2": "rke2-agent.service"}[prog]
			if prog == "rke2" {
				unit = "rke2-server.service"
				cmds = []string{"systemctl restart " + unit}
			}
			cmds = append(cmds, "systemctl restart "+agent)
		}
		steps = append(steps, Step{Action: resolve.ActionRestart, Component: comp, Unit: unit, Commands: cmds,
			Message: fmt.Sprintf("restart %s so that it reads the edited files (%s)", unit, restartKeeps[comp])})
	}
	for _, s := range p.steps {
		if s.Action == resolve.ActionRestart && restarts[s.Component] {
			continue // the restart above
		}
		if s.Action != resolve.ActionPull && s.Action != resolve.ActionLabel {
			steps = append(steps, s)
		}
	}
	// A label answers what an edit or an earlier step answers already:
	// an alternative.
	answered := map[resolve.Kind]bool{}
	for _, e := range plan.Edits {
		for _, c := range e.Changes {
			for _, k := range c.Answers {
				answered[k] = true
			}
		}
	}
	for i := range steps {
		if steps[i].Action == resolve.ActionLabel && answered[steps[i].Answers] && steps[i].Image != p.required {
			steps[i].Alternative = true
		}
		if steps[i].Action != resolve.ActionRestart {
			answered[steps[i].Answers] = true
		}
	}
	plan.Steps = append(plan.Steps, steps...)
	return plan, nil
}

// labelOn1x makes the label of the newly configured sandbox image a
// required step on containerd 1.x, where a restart is not enough: 1.x
// labels an image pinned when it stores the name (a CRI pull, an import)
// under the config of that moment, and at start relabels only the images
// it does not manage yet (pkg/cri/server/image_pull.go and restart.go at
// v1.7.35), so an image stored before the edit stays unpinned (seen live
// on 1.7.35 in TestFixUnderGC, internal/kubelettest). containerd 2.x
// relabels every image at start (CheckImages, internal/cri/server/images
// at v2.4.2). Where the label does not pin (before 1.6.22 and 1.7.3) the
// result's own fixes say what does.
func (p *planner) labelOn1x(answers resolve.Kind) {
	if resolve.Component(p.res.Runtime) != resolve.ComponentContainerd {
		return
	}
	major := ""
	for _, v := range p.res.Versions {
		if v.Used && v.Component == resolve.ComponentContainerd {
			major, _, _ = strings.Cut(strings.TrimPrefix(v.Version, "v"), ".")
		}
	}
	if major != "1" {
		return
	}
	f, ok := p.res.LabelFix(p.sandbox, answers)
	if !ok {
		return
	}
	p.required = p.sandbox
	if slices.ContainsFunc(p.steps, func(s Step) bool { return s.Action == resolve.ActionLabel && s.Image == p.sandbox }) {
		return
	}
	f.Message = "containerd 1.x pins an image it stored before its config named it only once labelled (a restart does not relabel it): " + f.Message
	p.steps = append(p.steps, Step{Action: resolve.ActionLabel, Answers: f.Answers, Component: resolve.ComponentContainerd, Image: p.sandbox,
		Commands: []string{p.labelCommand(p.sandbox)}, Message: f.Message})
}

// restartKeeps says what a restart of each component does to running
// containers.
var restartKeeps = map[resolve.Component]string{
	"containerd":  "running containers keep running: their shims outlive containerd",
	"cri-o":       "running containers keep running: conmon outlives CRI-O",
	"cri-dockerd": "running containers keep running: Docker Engine runs them",
	"kubelet":     "running pods keep running",
}

// unitOf is the systemd unit of a component.
func unitOf(comp resolve.Component, res *resolve.Result) string {
	switch comp {
	case "cri-o":
		return "crio.service"
	case "cri-dockerd":
		return "cri-docker.service"
	case "kubelet":
		return "kubelet.service"
	case "containerd":
		for _, c := range res.Candidates {
			if prog := generated(c.Path); prog != "" {
				return prog + ".service"
			}
		}
		return "containerd.service"
	}
	return string(comp)
}

func hashOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// isPackageUnit reports a systemd unit file a package owns, which an
// upgrade of the package overwrites.
func isPackageUnit(np string) bool {
	return strings.HasPrefix(np, "/lib/systemd/system/") || strings.HasPrefix(np, "/usr/lib/systemd/system/")
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
	fl.change(f.Answers, f.Location, h, f.Message+" (until "+prog+" writes the file again at its next start)")
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
				tf.change(f.Answers, resolve.Location{Line: i + 1}, h, fmt.Sprintf("%s writes %s from its template %s: set the sandbox image there too", prog, f.Path, tp))
				return nil
			}
		}
		p.manual(resolve.Fix{Answers: f.Answers, Location: resolve.Location{Path: tp}, Message: fmt.Sprintf(
			"%s writes %s from its template %s, which does not state %s: make it write %s (its .NodeConfig.AgentConfig.PauseImage is %s's pause-image)", prog, f.Path, tp, f.From, f.To, prog)})
		return nil
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
		"pause-image: \"" + f.To + "\"\n"}}, fmt.Sprintf("%s writes %s anew at every start: set its pause-image to %s", prog, f.Path, f.To))
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

// overrideExecStart writes a drop-in /etc/systemd/system/UNIT.d/90-sandboxpin.conf
// that resets ExecStart and sets it to the unit's command line at f.Path
// (joined from its continuation lines) as edit changes it.
func (p *planner) overrideExecStart(f resolve.Fix, comp resolve.Component, edit func(string) (string, bool)) error {
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
		return fmt.Errorf("%s: %w: no ExecStart", f.Path, ErrChanged)
	}
	cmd, ok = edit(cmd)
	if !ok {
		return fmt.Errorf("%s: %w: ExecStart does not hold %s %s", f.Path, ErrChanged, f.Flag, f.From)
	}
	np := "/etc/systemd/system/" + unit + ".d/90-sandboxpin.conf"
	fl, err := p.create(np, comp)
	if err != nil {
		return err
	}
	fl.change(f.Answers, resolve.Location{Key: "ExecStart", Flag: f.Flag}, hunk{repl: []string{
		"# Written by sandboxpin fix: " + unit + "'s command line from " + f.Path + ", which its package owns.\n",
		"[Service]\n", "ExecStart=\n", "ExecStart=" + cmd}}, f.Message)
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
