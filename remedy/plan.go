package remedy

import (
	"bytes"
	"context"
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
	// Backup is the node path of the directory [Apply] kept the originals
	// of this run in, links resolved ("/var/backups/sandboxpin/TIME");
	// "" when it kept none (no file was replaced).
	Backup string `json:"backup,omitempty"`
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
	// To is the value the change writes at Key (and Flag): an image
	// name, or a flag's value; "" for a removal. [Verify] refuses a plan
	// with two changes of one key to different values.
	To string `json:"to,omitempty"`
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
	// Commands are the commands that take the step, a sequence: run every
	// one, in order (a pull through CRI).
	Commands []string `json:"commands,omitempty"`
	// Alternatives are other ways to take the step, for a node where
	// Commands cannot run: each a sequence of its own, run instead of
	// Commands (the tag of the image stored under another name, on a node
	// that cannot pull). Empty when there is no other way.
	Alternatives [][]string `json:"alternatives,omitempty"`
	// Done says the step was taken (a pull through CRI by the command).
	Done bool `json:"done,omitempty"`
	// Alternative says the step answers a finding that an edit or a step
	// before it answers already: another way, for a node where that one
	// cannot be taken (a label where the config can be edited).
	Alternative bool `json:"alternative,omitempty"`
	// Message says it for people.
	Message string `json:"message"`
	// at is the place of the value an edit by hand changes, in the file
	// as it was read ([Verify] lets the finding stay there).
	at resolve.Location
}

// For plans the remedy of the node whose files are root (as
// [resolve.Options.Root]: nil is resolve.DirFS("/")), resolved as res
// and judged as v (nil when the runtime's images are not known: the plan
// then answers res.Fixes only). Every fix with a place in a file becomes an
// edit that changes only the bytes of its value or line; a change of the
// configured sandbox image comes with the step that stores the image under
// the new name. A fix whose value the text editor cannot change
// byte-exactly (a flow map, an escaped or multi-line string, an alias)
// becomes a step for a person ([resolve.ActionEdit]) naming the file and
// line. An error wraps [ErrChanged] when a file is shorter than the line
// res names in it (it changed since res was resolved), and is a
// *fs.PathError when a file cannot be read.
//
// Check the plan with [Verify] before applying it.
func For(ctx context.Context, res *resolve.Result, v *audit.Verdict, root fs.FS) (*Plan, error) {
	if res == nil {
		return nil, errors.New("remedy: nil result")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if root == nil {
		root = resolve.DirFS("/")
	}
	p := &planner{res: res, v: v, root: root, files: map[string]*file{}}
	fixes := res.Fixes
	if v != nil {
		fixes = v.Fixes
	}
	for _, f := range fixes {
		if err := p.fix(f); errors.Is(err, ErrUnsupported) {
			p.byHand(f, err)
		} else if err != nil {
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
//
// It returns the change recorded (to set its To), or a throwaway one when
// the change was left out.
func (f *file) change(k resolve.Kind, loc resolve.Location, h hunk, msg string) *Change {
	for i, c := range f.changes {
		if h0 := f.hunks[i]; h0.start == h.start && h0.n == h.n && slices.Equal(h0.repl, h.repl) {
			if !slices.Contains(c.Answers, k) {
				f.changes[i].Answers = append(f.changes[i].Answers, k)
			}
			return &f.changes[i]
		}
		if h0 := f.hunks[i]; h.start < h0.start+max(h0.n, 1) && h0.start < h.start+max(h.n, 1) {
			return &Change{}
		}
	}
	loc.Path = f.path
	if loc.Line == 0 {
		loc.Line = h.start + 1
	}
	f.hunks = append(f.hunks, h)
	f.changes = append(f.changes, Change{Answers: []resolve.Kind{k}, Location: loc,
		Before: strings.Join(f.t.lines[h.start:h.start+h.n], ""), After: strings.Join(h.repl, ""), Message: msg})
	return &f.changes[len(f.changes)-1]
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

// manual records a fix the plan cannot make as an edit by hand.
func (p *planner) manual(f resolve.Fix) {
	p.steps = append(p.steps, Step{Action: resolve.ActionEdit, Answers: f.Answers, Component: p.component(f.Path), Message: f.Message, at: f.Location})
}

// byHand records a fix that the text editor cannot make byte-exactly (err,
// which names the file and line, wraps [ErrUnsupported]) as an edit by hand.
// The same edit offered for two findings is one step.
func (p *planner) byHand(f resolve.Fix, err error) {
	f.Message += "; sandboxpin cannot make this edit exactly, make it by hand (" + err.Error() + ")"
	if !slices.ContainsFunc(p.steps, func(s Step) bool { return s.Action == resolve.ActionEdit && s.Message == f.Message }) {
		p.manual(f)
	}
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
		if !f.create && bytes.Equal(after, f.before) {
			continue // identical bytes are never rewritten
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

func hashOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}
