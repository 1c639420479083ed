package resolve

import (
	"context"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sandboxpin/sandboxpin/criinfo"
	"github.com/sandboxpin/sandboxpin/pin"
	"github.com/sandboxpin/sandboxpin/reference"
	"github.com/sandboxpin/sandboxpin/resolve/internal/config"
	"github.com/sandboxpin/sandboxpin/resolve/internal/nodefs"
	"github.com/sandboxpin/sandboxpin/resolve/internal/nodeversion"
	"github.com/sandboxpin/sandboxpin/resolve/internal/releases"
)

// LiveRuntime is what Resolve needs from a running runtime. The client in
// criinfo/cri satisfies it for a CRI socket.
type LiveRuntime interface {
	Info(ctx context.Context) (criinfo.Info, error)
}

// Options says where and what to resolve. Every field is optional; a zero
// Options reads the real node ("/") and no socket.
type Options struct {
	// Root is the node's root file system; DirFS("/") when nil. Paths
	// inside it are read without the leading "/" ("etc/containerd/config.toml").
	// For a directory on disk (a node image, a mounted disk) use [DirFS],
	// whose symbolic links resolve inside the directory like a chroot:
	// os.DirFS follows them onto the host. A root whose top is missing or
	// no directory (DirFS("/nonexistent")) is an error wrapping
	// [ErrNoRoot] that names it; a root that holds none of the files is
	// not: every source is absent.
	Root fs.FS

	// Live, when not nil, is asked once for what the runtime reports. Its
	// error is returned by Resolve: to resolve from files alone, call again
	// with a nil Live.
	Live LiveRuntime

	// KubeadmVersion is the version of the kubeadm binary that installs or
	// joins this node ("v1.31.2"); it selects kubeadm's pause image. When it is
	// empty, the version of the root's kubeadm binary or package is used
	// (see Versions in the package documentation), else the kubeadm config's
	// kubernetesVersion, with a note.
	KubeadmVersion string

	// KubeadmConfigPath is a kubeadm config file inside Root
	// ("/etc/kubernetes/kubeadm.yaml"). Unlike the node's own files, it is an
	// error when it does not exist.
	KubeadmConfigPath string

	// KubeletVersion is the kubelet's version ("v1.35.0"); it decides whether a
	// --pod-infra-container-image flag matters (below 1.29), is ignored (1.29
	// to 1.34) or stops the kubelet (1.35 on). When it is empty, the version
	// of the root's kubelet binary or package is used.
	KubeletVersion string

	// Runtime forces the runtime to resolve for (criinfo.RuntimeContainerd,
	// RuntimeCRIO or RuntimeCRIDockerd) instead of detecting it (the zero
	// value, or criinfo.RuntimeUnknown).
	Runtime criinfo.Runtime

	// RuntimeVersion is the runtime's version, used to pick its built-in
	// default, its config rules and its pinning facts when Live does not
	// report one. When it is empty too, the version of the runtime's binary
	// (its Go build info) or package in Root is used. For cri-dockerd the
	// version its CRI Version RPC reports is the Docker Engine's, never used.
	RuntimeVersion string

	// Aliases are the registry aliases used for every comparison;
	// nil means reference.DefaultAliases(), as in pin.WithAliases, and
	// reference.NoAliases() is none.
	Aliases *reference.Aliases

	// BinaryVersion, when set, is asked for the version of a node binary
	// that Resolve found (the path its unit's ExecStart names, or one in the
	// binary directories) but whose Go build info states none. cri-dockerd
	// built as its Makefile builds it is such a binary: -trimpath keeps
	// the -X version stamp out of the build info (cmd/go records -ldflags
	// only without -trimpath) and a build from a source archive has main
	// module version "(devel)", so only `cri-dockerd --version` tells
	// (seen live on v0.3.14 and v0.4.4, TestLiveCRIDockerdVersion).
	// Resolve itself never runs a program: the caller decides whether the
	// binary may run (the CLI runs it only on the live node, not in an
	// image's Root). component is "containerd", "cri-o", "cri-dockerd",
	// "kubelet" or "kubeadm"; path is the binary's path in Root
	// ("/usr/bin/cri-dockerd"). It returns the version as the binary prints
	// it ("0.4.4"); an error is noted.
	BinaryVersion func(ctx context.Context, component, path string) (string, error)

	// Today is the day on which end of life is judged: a component whose
	// release line's upstream support ended before it gets a note of kind
	// [KindEndOfLife]. Only its date (in UTC) counts. The zero Today means
	// the day this package's support table was read, so that Resolve,
	// like every other field's absence, reads no clock and gives the same
	// answer on every run: a release line past its end on that day is past
	// it on any later one, and a later end is not reported. Give
	// time.Now() to judge at the caller's own day (the table knows no
	// release newer than it, see [Result.SupportAsOf]).
	Today time.Time
}

// Candidate is one image that one source names for this node's sandbox.
type Candidate struct {
	// Image is the reference exactly as the source states it.
	Image string `json:"image"`
	// Source is the kind of source.
	Source Source `json:"source"`
	// Origin is "file:line", "runtime status (containerd v1.7.20)", or
	// "default of containerd v2.2.9".
	Origin string `json:"origin"`
	// Role is what the image is used for.
	Role Role `json:"role"`
	// Location says where a file states Image; zero for a live report or
	// a default. Its fields are flattened into the JSON object (path,
	// line, key, flag).
	Location
}

// IsZero reports whether c is the zero Candidate (the empty side of a
// one-sided Conflict).
func (c Candidate) IsZero() bool { return c == Candidate{} }

// Conflict is a real disagreement between two candidates, or a
// configuration mistake with one side (then B is zero).
type Conflict struct {
	A Candidate `json:"a"`
	B Candidate `json:"b,omitzero"`
	// Kind, Component, Version and Location are as in a [Note]: what the
	// conflict is about, the component and version it concerns, and the
	// file position to change (Origin() is its "file:line").
	Kind      Kind      `json:"kind"`
	Component Component `json:"component,omitempty"`
	Version   string    `json:"version,omitempty"`
	Location
	Message string `json:"message"` // what to change, where
}

// Result is what Resolve found.
type Result struct {
	// SandboxImage is the image the runtime starts pod sandboxes with,
	// exactly as the winning source states it; "" when it cannot be told.
	SandboxImage string `json:"sandboxImage"`
	// Runtime is the runtime resolved for: criinfo.RuntimeContainerd,
	// RuntimeCRIO, RuntimeCRIDockerd, or RuntimeUnknown when no runtime
	// was found.
	Runtime criinfo.Runtime `json:"runtime"`
	// Candidates are every image any source names, winner or not.
	Candidates []Candidate `json:"candidates"`
	// Conflicts are disagreements and configuration mistakes.
	Conflicts []Conflict `json:"conflicts"`
	// Winner is the candidate SandboxImage comes from (zero when none):
	// the live report, else the runtime's config file, else its default.
	Winner Candidate `json:"winner,omitzero"`
	// Notes are informational findings (alias-only differences and such).
	Notes []Note `json:"notes"`
	// Fix is the one change recommended first, from the node's files and
	// what the runtime reported (the answer to the first conflict that
	// stops the node, else to what leaves the sandbox image unprotected,
	// else to any other conflict), nil when none is needed. It is
	// Fixes[0]. sandboxpin's audit package refines it with the runtime's
	// images.
	Fix *Fix `json:"fix,omitempty"`
	// Fixes are every change offered, one per finding that has one (a
	// change that answers two findings is listed once, for the first),
	// most urgent first ([Fix.Urgency]), in the order found within an
	// urgency.
	Fixes []Fix `json:"fixes,omitempty"`
	// Pins are the patterns to compile a pin.Matcher from, in PinMode:
	// the sandbox image (when known) first, then the runtime's own pinned
	// images. In pin.ModeCRIDockerdCompat the sandbox image is cri-dockerd's
	// own rule (pin.WithSandboxImage) and the rest its --pinned-images
	// entries, as written, even one equal to the sandbox image:
	// [Result.RuntimeMatcher] compiles them so.
	Pins []string `json:"pins"`
	// PinMode is pin.ModeCRIOCompat for CRI-O, pin.ModeCRIDockerdCompat for
	// cri-dockerd 0.4.7 and later (which read --pinned-images), pin.ModeStrict
	// otherwise; "" (a Result made by hand) counts as pin.ModeStrict, and a
	// mode pin does not know makes [Result.Matcher] an error.
	PinMode pin.Mode `json:"pinMode"`
	// PinLabels are cri-dockerd's --pinned-image-labels entries
	// (pin.WithImageLabels), in pin.ModeCRIDockerdCompat only; nil otherwise.
	PinLabels []string `json:"pinLabels,omitempty"`
	// Prepull are the images an installer must pull for this node to work
	// offline (kubeadm's pause image for an upgrade too, which runs it as a
	// Job's container): every exact name a consumer on the node looks up, merged
	// only when identical, so two spellings of one image are both listed
	// (each consumer compares strings), with a PrepullTwoNames note on
	// storing the image under both. A name that is not a valid reference
	// is not listed: a Conflict of KindInvalidReference says where it is.
	Prepull []string `json:"prepull"`
	// Versions are the versions of the runtime, the kubelet and kubeadm
	// that Resolve found, each with where it was read; the one used for a
	// component has Used set.
	Versions []ComponentVersion `json:"versions"`
	// AliasRules are the registry aliases of Options.Aliases, as
	// [reference.Aliases.Rules] gives them, with the meaning an *Aliases
	// has everywhere: nil (JSON key absent) is the defaults (Options.Aliases
	// nil or [reference.DefaultAliases]), an empty slice (JSON "aliases": [],
	// from [reference.NoAliases]) is none. [Result.Aliases] turns them back
	// into the set Resolve compared with, so that a Result read back from
	// its JSON compares as the one Resolve returned.
	AliasRules []reference.Alias `json:"aliases,omitzero"`
	// RuntimeCommand is what the runtime's command line says about its
	// configuration (a config file, a drop-in directory, a pause image),
	// nil when it says nothing of it.
	RuntimeCommand *RuntimeCommand `json:"runtimeCommand,omitempty"`
	// SupportAsOf is the day end of life was judged on: Options.Today's
	// date, or when it was zero the day the support table was read
	// (KindEndOfLife notes say which).
	SupportAsOf time.Time `json:"supportAsOf,omitzero"`
}

// Resolve reads every source of the node's sandbox image and decides which
// one the runtime uses. See the package documentation for the sources, the
// authority between them and what counts as a conflict.
//
// A malformed file is a *ConfigError (wrapping ErrInvalidConfig) that names
// the file, line and key; a missing file is an absent source. Resolve reads
// nothing but Root and Live, and is safe for concurrent use with distinct
// Options.
func Resolve(ctx context.Context, opts Options) (*Result, error) {
	res, err := resolveNode(ctx, opts)
	return res, exportErr(err)
}

// resolveNode is Resolve, with the readers' own ConfigError.
func resolveNode(ctx context.Context, opts Options) (*Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if rt := opts.Runtime; rt != "" && rt != criinfo.RuntimeUnknown && !rt.Known() {
		return nil, fmt.Errorf("resolve: Options.Runtime %q: %w: want %q, %q or %q",
			opts.Runtime, criinfo.ErrUnknownRuntime, criinfo.RuntimeContainerd, criinfo.RuntimeCRIO, criinfo.RuntimeCRIDockerd)
	}
	root := opts.Root
	if root == nil {
		root = DirFS("/")
	}
	if err := checkRoot(root); err != nil {
		return nil, err
	}
	aliases := opts.Aliases
	if aliases == nil {
		aliases = reference.DefaultAliases()
	}
	r := &resolver{
		opts: opts,
		norm: aliases,
		res: &Result{
			Candidates: []Candidate{}, Conflicts: []Conflict{}, Notes: []Note{},
			Pins: []string{}, Prepull: []string{}, PinMode: pin.ModeStrict, Versions: []ComponentVersion{},
			AliasRules: aliasRules(opts.Aliases),
		},
	}
	if opts.Live != nil {
		info, err := opts.Live.Info(ctx)
		if err != nil {
			return nil, fmt.Errorf("resolve: live runtime: %w", err)
		}
		r.live = &info
	}
	b := nodefs.NewBudget(ctx, root)
	if err := r.read(b); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("resolve: %w", context.Cause(ctx))
		}
		return nil, err
	}
	r.chooseRuntime()
	if err := r.versions(b); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("resolve: %w", context.Cause(ctx))
		}
		return nil, err
	}
	if err := r.rereadContainerd(root); err != nil {
		return nil, err
	}
	r.runtimeImage()
	r.checkKubelet()
	r.checkKubeletVersion()
	r.checkKubeadm()
	r.checkSupport()
	r.checkReferences()
	r.pinsAndPrepull()
	r.sortFixes()
	return r.res, r.res.Err()
}

// locationOf is where f was read.
func locationOf(f config.Found) Location {
	return Location{Path: f.Path, Line: f.Line, Key: f.Key, Flag: f.Flag}
}

// resolver holds one Resolve call's state.
type resolver struct {
	opts Options
	norm *reference.Aliases
	res  *Result
	live *criinfo.Info

	ctrs    []*config.Containerd // every containerd config found, by preference
	ctr     *config.Containerd   // the one containerd uses (CRI enabled)
	crio    *config.CRIO
	crid    *config.CRIDockerd
	kubelet *config.Kubelet
	kubeadm *config.Kubeadm

	runtime    Component
	runtimeVer string // the runtime's version, "" when unknown (see versions)
	// runtimeChoice, kubeletVer and kubeadmVer are the versions used and
	// where they come from.
	runtimeChoice, kubeletVer, kubeadmVer nodeversion.Choice
	// winner is the candidate SandboxImage comes from.
	winner Candidate
	// fileCand is the chosen runtime's configured image, if any.
	fileCand *Candidate
	// kubeadmCand is what kubeadm expects, nil if unknown.
	kubeadmCand *Candidate
	// cridPrepull are cri-dockerd's exact --pinned-images entries.
	cridPrepull []string
}

// finding is a Note being made, with the origin its Location is found
// from when it has none: a "file:line" or a candidate's Origin.
type finding struct {
	Note
	origin string
}

// withOrigin is n about origin.
func withOrigin(origin string, n Note) finding { return finding{Note: n, origin: origin} }

// note records a Note: f's kind, component, version and location with the
// message format makes.
func (r *resolver) note(f finding, format string, args ...any) {
	n := f.Note
	n.Message = fmt.Sprintf(format, args...)
	if n.Location == (Location{}) {
		n.Location = r.locate(f.origin)
	}
	r.res.Notes = append(r.res.Notes, n)
}

// locate returns the Location that origin names: that of the candidate
// with that Origin (with its key and flag), else the "path:line" it spells,
// else the zero Location (a live report, a default, no file).
func (r *resolver) locate(origin string, also ...Candidate) Location {
	if origin == "" {
		return Location{}
	}
	for _, c := range append(also, r.res.Candidates...) {
		if c.Origin == origin && c.Location != (Location{}) {
			return c.Location
		}
	}
	if !strings.HasPrefix(origin, "/") {
		return Location{}
	}
	path, line, ok := strings.Cut(origin[1:], ":")
	if n, err := strconv.Atoi(line); ok && err == nil && n > 0 {
		return Location{Path: "/" + path, Line: n}
	}
	return Location{Path: origin}
}

// conflict records a Conflict between a and b (b zero for a mistake with
// one side), with n's kind, component, version and origin.
func (r *resolver) conflict(f finding, a, b Candidate, format string, args ...any) {
	loc := f.Location
	if loc == (Location{}) {
		loc = r.locate(f.origin, a, b)
	}
	r.res.Conflicts = append(r.res.Conflicts, Conflict{A: a, B: b, Kind: f.Kind, Component: f.Component,
		Version: f.Version, Location: loc, Message: fmt.Sprintf(format, args...)})
}

// rt is a finding of kind k about the runtime at its version.
func (r *resolver) rt(k Kind, origin string) finding {
	return withOrigin(origin, Note{Kind: k, Component: r.runtime, Version: r.runtimeVer})
}

func (r *resolver) add(c Candidate) Candidate {
	r.res.Candidates = append(r.res.Candidates, c)
	return c
}

func candidateOf(f config.Found, src Source, role Role) Candidate {
	return Candidate{Image: f.Value, Source: src, Origin: f.Origin(), Role: role, Location: locationOf(f)}
}

// read reads every source, each through its own view of the root (see
// nodefs.Budget): a limit passed or a cancellation is returned even when a
// reader took it for an absent file.
func (r *resolver) read(b *nodefs.Budget) error {
	if err := r.readContainerdConfigs(b); err != nil {
		return err
	}
	var err error
	r.crio, err = config.ReadCRIO(b.Source())
	if err := b.First(err); err != nil {
		return err
	}
	r.crid, err = config.ReadCRIDockerd(b.Source())
	if err := b.First(err); err != nil {
		return err
	}
	r.kubelet, err = config.ReadKubelet(b.Source())
	if err := b.First(err); err != nil {
		return err
	}
	if p := r.opts.KubeadmConfigPath; p != "" {
		name, ok := nodefs.FSPath(p)
		if !ok || name == "." {
			return fmt.Errorf("resolve: Options.KubeadmConfigPath %q is not a file path", p)
		}
		r.kubeadm, err = config.ReadKubeadm(b.Source(), name)
		if err := b.First(err); err != nil {
			return err
		}
	}
	return nil
}

// configured returns the runtimes whose configuration exists, in the order
// containerd, cri-o, cri-dockerd, with the file that shows each.
func (r *resolver) configured() (names []Component, files []string) {
	for _, c := range r.ctrs {
		if c.Disabled == nil {
			r.ctr = c
			names, files = append(names, runtimeContainerd), append(files, c.Path)
			break
		}
	}
	if r.crio != nil {
		names, files = append(names, runtimeCRIO), append(files, r.crio.Files[0])
	}
	if r.crid != nil {
		names, files = append(names, runtimeCRIDockerd), append(files, r.crid.Files[0])
	}
	return names, files
}

func (r *resolver) chooseRuntime() {
	for _, c := range r.ctrs {
		if c.Disabled != nil {
			r.note(withOrigin(c.Disabled.Origin(), Note{Kind: KindContainerdCRIDisabled, Component: runtimeContainerd}), "%s turns containerd's CRI plugin off (disabled_plugins = [%q], as Docker's packaged config does): "+
				"that containerd serves no Kubernetes pods", c.Disabled.Origin(), c.Disabled.Value)
		}
	}
	names, files := r.configured()
	for _, c := range r.ctrs {
		if c != r.ctr && c.Disabled == nil {
			r.note(withOrigin(c.Path, Note{Kind: KindContainerdOtherConfig, Component: runtimeContainerd}), "%s is also a containerd config; %s was read as the one the kubelet's containerd uses", c.Path, r.ctr.Path)
		}
	}
	how := ""
	switch {
	case r.opts.Runtime.Known():
		r.runtime, how = Component(r.opts.Runtime), "Options.Runtime"
	case r.live != nil && r.live.Runtime.Known():
		r.runtime, how = Component(r.live.Runtime), "the live runtime"
	case r.kubelet != nil && r.kubelet.Endpoint != nil && config.RuntimeFromEndpoint(r.kubelet.Endpoint.Value).Known():
		r.runtime = Component(config.RuntimeFromEndpoint(r.kubelet.Endpoint.Value))
		how = "the kubelet's --" + config.KubeletEndpointFlag + " at " + r.kubelet.Endpoint.Origin()
	case r.kubeadm != nil && r.kubeadm.CRISocket != nil && config.RuntimeFromEndpoint(r.kubeadm.CRISocket.Value).Known():
		r.runtime = Component(config.RuntimeFromEndpoint(r.kubeadm.CRISocket.Value))
		how = "kubeadm's criSocket at " + r.kubeadm.CRISocket.Origin()
	case len(names) > 0:
		r.runtime = names[0]
	}
	r.res.Runtime = criinfo.Runtime(r.runtime)
	if r.runtime == "" {
		r.res.Runtime = criinfo.RuntimeUnknown
		r.note(withOrigin("", Note{Kind: KindNoRuntime}), "no container runtime found: no config file of containerd, CRI-O or cri-dockerd, and no live runtime")
		return
	}
	if len(names) > 1 {
		var cands []Candidate
		for i, n := range names {
			if f := r.configuredFound(n); f != nil {
				cands = append(cands, candidateOf(*f, runtimeSource(n), RoleRuntimeUses))
			} else {
				cands = append(cands, Candidate{Source: runtimeSource(n), Origin: files[i], Role: RoleRuntimeUses})
			}
		}
		list := make([]string, len(names))
		for i := range names {
			list[i] = string(names[i]) + " (" + files[i] + ")"
		}
		if how == "" {
			r.conflict(withOrigin("", Note{Kind: KindSeveralRuntimes, Component: r.runtime}), cands[0], cands[1], "%d container runtimes are configured on this node: %s; "+
				"%s was assumed: remove the other's configuration, or name the runtime", len(names), strings.Join(list, ", "), r.runtime)
		} else {
			r.note(withOrigin("", Note{Kind: KindSeveralRuntimes, Component: r.runtime}), "%d container runtimes are configured on this node: %s; %s is used, from %s",
				len(names), strings.Join(list, ", "), r.runtime, how)
		}
	}
	if r.opts.Runtime.Known() && r.live != nil && r.live.Runtime != r.opts.Runtime && r.live.Runtime.Known() {
		r.note(withOrigin("", Note{Kind: KindLiveIgnored, Component: r.runtime}), "the runtime was given as %s but the live runtime is %s; its report is ignored", r.opts.Runtime, r.live.Runtime)
		r.live = nil
	}
	if r.live != nil && Component(r.live.Runtime) != r.runtime {
		// An unidentified runtime's report cannot be trusted for this one.
		r.note(withOrigin("", Note{Kind: KindLiveIgnored, Component: r.runtime}), "the live runtime did not identify itself (%q); its report was not used for %s", r.live.Runtime, r.runtime)
		r.live = nil
	}
	switch r.runtime {
	case runtimeCRIO:
		r.res.PinMode = pin.ModeCRIOCompat
	case runtimeContainerd:
		if r.ctr == nil && len(r.ctrs) > 0 {
			r.note(withOrigin("", Note{Kind: KindContainerdCRIDisabled, Component: runtimeContainerd}), "containerd is the runtime but every containerd config found disables CRI: it is configured elsewhere (containerd --config)")
		}
	}
}

// rereadContainerd reads the containerd config again as containerd 2.3 and
// later load it when the runtime is known to be one of those and the main
// file (below version 4) was read with the rules of 2.0–2.2.
func (r *resolver) rereadContainerd(root fs.FS) error {
	if r.runtime != runtimeContainerd || r.ctr == nil || r.ctr.Loader == config.Loader23 {
		return nil
	}
	v, err := parseVersion(r.runtimeVer)
	if err != nil || !containerdConfig4(v) {
		return nil
	}
	name, _ := nodefs.FSPath(r.ctr.Path)
	c, err := config.ReadContainerdAs(root, name, r.ctr.Flavor, config.Loader23)
	if err != nil || c == nil {
		return err
	}
	c.ConfigFlag, c.PauseFlag = r.ctr.ConfigFlag, r.ctr.PauseFlag
	for i := range r.ctrs {
		if r.ctrs[i] == r.ctr {
			r.ctrs[i] = c
		}
	}
	r.ctr = c
	return nil
}

func runtimeSource(rt Component) Source {
	switch rt {
	case runtimeContainerd:
		return SourceContainerdConfig
	case runtimeCRIO:
		return SourceCRIOConfig
	}
	return SourceCRIDockerdFlags
}

func (r *resolver) configuredFound(rt Component) *config.Found {
	switch rt {
	case runtimeContainerd:
		if r.ctr != nil {
			return r.ctr.Sandbox
		}
	case runtimeCRIO:
		if r.crio != nil {
			return r.crio.PauseImage
		}
	case runtimeCRIDockerd:
		if r.crid != nil {
			return r.crid.PauseImage
		}
	}
	return nil
}

// runtimeImage decides SandboxImage: live report > config files > default.
func (r *resolver) runtimeImage() {
	// Every runtime's configured image is a candidate, chosen or not, and
	// every configuration mistake is reported.
	for _, c := range r.ctrs {
		if c.Sandbox != nil {
			cand := r.add(candidateOf(*c.Sandbox, SourceContainerdConfig, RoleRuntimeUses))
			if c == r.ctr && r.runtime == runtimeContainerd {
				r.fileCand = &cand
			}
		}
		for i, p := range append(slices.Clone(c.Ignored), c.Problems...) {
			a := Candidate{Source: SourceContainerdConfig, Origin: p.At.Origin(), Role: RoleRuntimeUses}
			if p.At.Value != "" && p.At.Key != "imports" && p.At.Key != "version" {
				a = candidateOf(p.At, SourceContainerdConfig, RoleRuntimeUses)
			}
			r.conflict(withOrigin(p.At.Origin(), Note{Kind: KindConfigMistake, Component: runtimeContainerd}), a, Candidate{}, "%s", p.Msg)
			if i < len(c.Ignored) {
				// A key the release ignores is dead: the image in use
				// comes from elsewhere, and removing the key keeps it
				// (moving its value would change it).
				r.offer(rankOther, Fix{Answers: KindConfigMistake, Action: ActionRemove, Location: a.Location, From: a.Image,
					Message: fmt.Sprintf("remove %s, which containerd ignores in this file: the sandbox image in use stays "+
						"(to use %s instead, set it at the key the file's version reads)", p.At.Key, a.Image)})
				continue
			}
			r.offerConflict(rankOther, Fix{Action: ActionEdit})
		}
	}
	if r.crio != nil {
		if r.crio.PauseImage != nil {
			cand := r.add(candidateOf(*r.crio.PauseImage, SourceCRIOConfig, RoleRuntimeUses))
			if r.runtime == runtimeCRIO {
				r.fileCand = &cand
			}
		}
		for _, p := range r.crio.Problems {
			a := candidateOf(p.At, SourceCRIOConfig, RoleRuntimeUses)
			r.conflict(withOrigin(p.At.Origin(), Note{Kind: KindConfigMistake, Component: runtimeCRIO}), a, Candidate{}, "%s", p.Msg)
			r.offerConflict(rankOther, Fix{Action: ActionEdit})
		}
	}
	if r.crid != nil {
		if r.crid.PauseImage != nil {
			cand := r.add(candidateOf(*r.crid.PauseImage, SourceCRIDockerdFlags, RoleRuntimeUses))
			if r.runtime == runtimeCRIDockerd {
				r.fileCand = &cand
			}
		}
		for _, n := range r.crid.Notes {
			r.note(withOrigin(r.crid.Files[0], Note{Kind: KindUnitNote, Component: runtimeCRIDockerd}), "%s", n)
		}
	}
	if r.runtime == "" {
		return
	}

	var liveCand *Candidate
	if r.live != nil && r.live.SandboxImageReported && r.live.SandboxImage != "" {
		ver := r.live.RuntimeVersion
		if r.runtime == runtimeCRIDockerd {
			ver = ""
			if e := engineVersion(r.live); e != "" {
				ver = "on Docker Engine " + e
			}
		}
		c := r.add(Candidate{Image: r.live.SandboxImage, Source: SourceRuntimeInfo,
			Origin: "runtime status (" + strings.TrimSpace(string(r.runtime)+" "+ver) + ")", Role: RoleRuntimeUses})
		liveCand = &c
	}
	var defCand *Candidate
	if r.runtimeVer != "" {
		img, err := RuntimeDefaultImage(criinfo.Runtime(r.runtime), r.runtimeVer)
		if err != nil {
			r.note(r.rt(KindVersionUnknown, ""), "no built-in default sandbox image is known for %s %s", r.runtime, r.runtimeVer)
		} else {
			c := r.add(Candidate{Image: img, Source: SourceRuntimeDefault,
				Origin: "default of " + string(r.runtime) + " " + r.runtimeVer + r.runtimeChoice.From(), Role: RoleRuntimeUses})
			defCand = &c
		}
	}
	r.containerdVersionChecks()

	switch {
	case liveCand != nil:
		r.winner = *liveCand
		if r.fileCand != nil {
			restart := r.compare(r.rt(KindRuntimeNotRestarted, r.fileCand.Origin), *liveCand, *r.fileCand,
				fmt.Sprintf("the running %s reports %s, but %s sets %s: %s was not restarted since that file changed, "+
					"or runs with another config; restart %s or change the value at %s",
					r.runtime, liveCand.Image, r.fileCand.Origin, r.fileCand.Image, r.runtime, r.runtime, r.fileCand.Origin))
			if restart {
				r.offerConflict(rankOther, Fix{Action: ActionRestart, Component: r.runtime})
			}
		} else if defCand != nil {
			if r.relate(liveCand.Image, defCand.Image) == relDiffer {
				r.note(r.rt(KindRuntimeConfigElsewhere, ""), "the running %s reports %s, not its default %s, although no config file read sets it: "+
					"it may run with a config elsewhere (--config)", r.runtime, liveCand.Image, defCand.Image)
			}
		}
	case r.fileCand != nil:
		r.winner = *r.fileCand
	case defCand != nil:
		r.winner = *defCand
	default:
		if r.live != nil && r.runtime == runtimeContainerd && !r.live.SandboxImageReported {
			r.note(r.rt(KindContainerdNoSandboxReport, ""), "%s", releases.ContainerdNoSandboxReport.Note())
		}
		r.note(r.rt(KindSandboxImageUnknown, ""), "cannot tell %s's sandbox image: no config file sets it and its version is unknown: "+
			"no live runtime, binary's Go build info or installed package states it", r.runtime)
	}
	r.res.SandboxImage, r.res.Winner = r.winner.Image, r.winner
	r.exactPinCheck()
	r.checkFrozen()
	r.commandSettings()
}

// exactPinCheck notes what the runtime's version means for pinning the
// sandbox image, then what the spelling of the image means for the
// runtime's compare (containerd 1.x normalizes it, 2.x and cri-dockerd
// compare strings): the code tells the spelling, the rows of package
// releases the versions each note applies to and where that was read.
func (r *resolver) exactPinCheck() {
	v, err := parseVersion(r.runtimeVer)
	if err != nil && r.runtime != "" && r.runtimeVer == "" {
		r.unknownRuntimeVersion()
	}
	if r.runtime == runtimeCRIO {
		r.crioPinCheck(v, err == nil)
		return
	}
	if err != nil {
		return
	}
	img := r.res.SandboxImage
	switch r.runtime {
	case runtimeContainerd:
		if r.noteFact(releases.ContainerdNeverPins, v) {
			r.upgrade(releases.ContainerdNeverPins, releases.ContainerdPinsCRIPulls, v)
			return
		}
		r.noteFact(releases.ContainerdPinsCRIPulls, v)
	case runtimeCRIDockerd:
		if r.noteFact(releases.CRIDockerdNeverPins, v) {
			r.upgrade(releases.CRIDockerdNeverPins, releases.CRIDockerdNeverPins, v)
			return
		}
	default:
		return
	}
	if img == "" || strings.Contains(img, "$") {
		return
	}
	ref, err := r.norm.Parse(img)
	if err != nil {
		return
	}
	plain, err := reference.Parse(img)
	if err != nil {
		return
	}
	nameTag := plain.Name()
	if plain.Tag() != "" {
		nameTag += ":" + plain.Tag()
	}
	if r.runtime == runtimeContainerd {
		r.containerdNotFound(plain, v)
	}
	switch {
	case r.runtime == runtimeCRIDockerd:
		famRef, err := reference.Parse(nameTag)
		if err != nil {
			return
		}
		want := famRef.Familiar()
		switch {
		case plain.Name() != ref.Name():
			r.spelling(releases.CRIDockerdAliasNeverPinned, ref.Familiar(), v, img, r.winner.Origin, ref.String(), img, ref.String())
		case plain.Digest() != "" && plain.Tag() == "":
			// No tag to suggest: Docker stores the image under whatever
			// tag it was pulled, loaded or tagged with.
			r.noteFact(releases.CRIDockerdDigestOnlyNeverPinned, v, img, r.winner.Origin, plain.Digest())
		case plain.Digest() != "":
			r.spelling(releases.CRIDockerdDigestNeverPinned, want, v, img, r.winner.Origin, want)
		case img != want:
			r.spelling(releases.CRIDockerdOtherSpelling, want, v, want, img, r.winner.Origin, want)
		}
	case !r.norm.Equal(plain.String(), ref.String()) || plain.String() != ref.String() && plain.Name() != ref.Name():
		r.spelling(releases.ContainerdAliasNeverPinned, ref.String(), v, img, r.winner.Origin, ref.String())
	case plain.Tag() != "" && plain.Digest() != "":
		nameDigest := plain.Name() + "@" + plain.Digest().String()
		if !r.spelling(releases.ContainerdTagDigestNeverPinned, nameDigest, v, img, r.winner.Origin, nameTag, nameDigest) {
			r.noteFact(releases.ContainerdTagDigestDropsTag, v, img, r.winner.Origin, nameDigest, nameTag)
		}
	case hasDomain(img) && !fullyQualified(img):
		r.spelling(releases.ContainerdTaglessNeverPinned, ref.String(), v, img, r.winner.Origin, ref.String(), ref.String())
	case !fullyQualified(img):
		r.spelling(releases.ContainerdShortNeverPinned, ref.String(), v, img, r.winner.Origin, ref.String(), ref.String())
	}
}

// containerdNotFound checks the facts of containerd's own lookup of the
// sandbox image, plain as written: containerd 2.3.0 to 2.3.3 start no pod
// when it is not written as containerd stores it (ParseDockerRef's form:
// the full name, :latest for no tag, name@digest for name:tag@digest), and
// containerd 2.4 does not pull it for a handler with
// disable_pause_image_pull.
func (r *resolver) containerdNotFound(plain reference.Ref, v version) {
	img := r.res.SandboxImage
	stored := plain.Name() + ":latest"
	switch {
	case plain.Digest() != "":
		stored = plain.Name() + "@" + plain.Digest().String()
	case plain.Tag() != "":
		stored = plain.Name() + ":" + plain.Tag()
	}
	if note, ok := releases.ContainerdSandboxNotFound.Holds(v); ok && img != stored {
		k := r.rt(KindContainerdSandboxNotFound, r.winner.Origin)
		r.conflict(k, r.winner, Candidate{}, note, r.runtimeVer, img, r.winner.Origin, stored, stored)
		r.editSandbox(rankStops, KindContainerdSandboxNotFound, stored)
	}
	if r.ctr == nil {
		return
	}
	for _, h := range r.ctr.PausePullOff {
		r.noteFact(releases.ContainerdPausePullOff, v, h.Handler, h.Origin(), stored)
	}
}

// noteFact notes f's note, with the runtime's version and args, when f
// holds at v, and reports whether it does.
func (r *resolver) noteFact(f releases.Fact, v version, args ...any) bool {
	note, ok := f.Holds(v)
	if ok {
		r.note(r.rt(factKinds[f], r.winner.Origin), note, append([]any{r.runtimeVer}, args...)...)
	}
	return ok
}

// spelling notes the fact f on the sandbox image's spelling, as noteFact
// does, and when it holds offers to write to in its place.
func (r *resolver) spelling(f releases.Fact, to string, v version, args ...any) bool {
	ok := r.noteFact(f, v, args...)
	if ok {
		r.editSandbox(rankUnprotected, factKinds[f], to)
	}
	return ok
}

// hasDomain reports whether s names its registry, as in
// "registry.k8s.io/pause" and not "pause:3.10".
func hasDomain(s string) bool {
	first, _, ok := strings.Cut(s, "/")
	return ok && (strings.ContainsAny(first, ".:") || first == "localhost")
}

// fullyQualified reports whether s names its registry and a tag or digest,
// the form runtimes store images under. For example,
// fullyQualified("registry.k8s.io/pause:3.10") is true and
// fullyQualified("pause:3.10") is false.
func fullyQualified(s string) bool {
	if !hasDomain(s) {
		return false
	}
	last := s[strings.LastIndexByte(s, '/')+1:]
	return strings.ContainsAny(last, ":@")
}

// containerdVersionChecks reports what depends on containerd's major version.
func (r *resolver) containerdVersionChecks() {
	if r.runtime != runtimeContainerd || r.ctr == nil {
		return
	}
	v, err := parseVersion(r.runtimeVer)
	known := err == nil
	at := Candidate{Source: SourceContainerdConfig, Origin: fmt.Sprintf("%s:%d", r.ctr.Path, 1), Role: RoleRuntimeUses,
		Location: Location{Path: r.ctr.Path, Line: 1, Key: "version"}}
	switch {
	case known && v.Major == 1 && r.ctr.Version >= 3:
		r.conflict(r.rt(KindContainerdConfigVersion, at.Origin), at, Candidate{},
			"%s is a version %d config, which containerd %s (1.x) does not accept: containerd fails to start; "+
				"write a version 2 config or upgrade containerd to 2.x", r.ctr.Path, r.ctr.Version, r.runtimeVer)
		r.offerConflict(rankStops, Fix{Action: ActionEdit})
	case known && v.Major == 2 && !containerdConfig4(v) && r.ctr.Version >= 4:
		// 2.2.9: "expected containerd config version equal to or less
		// than `3`, got `4`" (seen live); version.ConfigVersion is 3 in
		// version/version.go at v2.2.9.
		r.conflict(r.rt(KindContainerdConfigVersion, at.Origin), at, Candidate{},
			"%s is a version %d config, which containerd %s accepts only from 2.3 on: containerd fails to start; "+
				"write a version 3 config (or run `containerd config migrate` with this containerd) or upgrade containerd",
			r.ctr.Path, r.ctr.Version, r.runtimeVer)
		r.offerConflict(rankStops, Fix{Action: ActionEdit})
	case known && v.Major >= 2 && r.ctr.Migrated && r.ctr.Sandbox != nil:
		// `containerd config migrate` prints the loaded config with
		// version = version.ConfigVersion (cmd/containerd/command/config.go,
		// outputConfig): 3 at v2.0.0–v2.2.9, 4 at v2.3.7 and v2.4.2.
		target := 3
		if containerdConfig4(v) {
			target = 4
		}
		r.note(r.rt(KindContainerdMigratesSandbox, r.ctr.Sandbox.Origin()), "containerd %s migrates sandbox_image at %s to pinned_images.sandbox in memory "+
			"(`containerd config migrate` writes the version %d form)", r.runtimeVer, r.ctr.Sandbox.Origin(), target)
	case !known && r.ctr.Version >= 4:
		r.note(r.rt(KindContainerdConfigVersion, at.Origin), "%s is a version %d config: only containerd 2.3 and later read it", r.ctr.Path, r.ctr.Version)
	case !known && r.ctr.Version == 3:
		r.note(r.rt(KindContainerdConfigVersion, at.Origin), "%s is a version 3 config: only containerd 2.x reads it", r.ctr.Path)
	}
}

// relation is how two image strings relate.
type relation int

const (
	relSame    relation = iota // the same string
	relAlias                   // the same image, spelled differently (aliases, defaults)
	relDigest                  // the same name and tag, one side pins a digest
	relDiffer                  // different images
	relInvalid                 // one side does not parse
)

func (r *resolver) relate(a, b string) relation {
	if a == b {
		return relSame
	}
	ra, errA := r.norm.Parse(a)
	rb, errB := r.norm.Parse(b)
	if errA != nil || errB != nil {
		return relInvalid
	}
	if r.norm.Equal(a, b) {
		return relAlias
	}
	if ra.Tag() != "" && ra.Tag() == rb.Tag() && (ra.Digest() == "" || rb.Digest() == "") &&
		r.norm.Equal(ra.Name()+":"+ra.Tag(), rb.Name()+":"+rb.Tag()) {
		return relDigest
	}
	return relDiffer
}

// compare records a Conflict (of k, with msg) when a and b name different
// images, and reports whether it did; it records a Note when they are the
// same image spelled differently.
func (r *resolver) compare(k finding, a, b Candidate, msg string) bool {
	switch r.relate(a.Image, b.Image) {
	case relAlias:
		r.note(withOrigin(a.Origin, Note{Kind: KindSameImageAlias, Component: k.Component, Version: k.Version}), "%s (%s) and %s (%s) name the same image through a registry alias or default; "+
			"tools that compare strings (kubeadm's check, containerd 2.x and cri-dockerd pinning) treat them as different",
			a.Image, a.Origin, b.Image, b.Origin)
	case relDigest:
		r.note(withOrigin(a.Origin, Note{Kind: KindSameTagDigest, Component: k.Component, Version: k.Version}), "%s (%s) and %s (%s) name the same tag, one with a digest; make sure the digest is that tag's",
			a.Image, a.Origin, b.Image, b.Origin)
	case relDiffer:
		r.conflict(k, a, b, "%s", msg)
		return true
	}
	return false
}

// checkKubelet compares the kubelet's --pod-infra-container-image with the
// runtime's image and with what the kubelet version does with the flag, and
// checks the flag in kubeadm's kubeletExtraArgs, which kubeadm writes into
// kubeadm-flags.env at its next init or join (cmd/kubeadm/app/phases/kubelet/flags.go WriteKubeletDynamicEnvFile @v1.35.0).
func (r *resolver) checkKubelet() {
	var extra []config.Found
	if r.kubeadm != nil {
		extra = r.kubeadm.KubeletSandboxArgs
	}
	if (r.kubelet == nil || len(r.kubelet.SandboxArgs) == 0) && len(extra) == 0 {
		return
	}
	var kv version
	known := false
	kubeletVer := r.kubeletVer.Version
	if kubeletVer != "" {
		v, err := parseVersion(kubeletVer)
		if err != nil {
			r.note(withOrigin("", Note{Kind: KindVersionUnknown, Component: nodeversion.Kubelet}), "%s %q is not a version; the kubelet flag was checked as for an unknown kubelet", r.kubeletVer.Fact.Origin, kubeletVer)
		} else {
			kv, known = v, true
		}
	}
	var rejects, ignores string
	var rejected, ignored bool
	if known {
		rejects, rejected = releases.KubeletRejectsFlag.Holds(kv)
		ignores, ignored = releases.KubeletIgnoresFlag.Holds(kv)
		// A kubelet 1.29 or later in no row (a 1.35 pre-release not read)
		// is checked as one of unknown version.
		known = rejected || ignored || kv.Before(1, 29, 0)
	}
	// kubeadm 1.36 and later leave the flag wherever it is: every finding
	// on it says so, and a note after them.
	keeps := r.kubeadmKeeps()
	rejects, ignores = rejects+keeps, ignores+keeps
	if r.kubelet != nil && len(r.kubelet.SandboxArgs) > 0 {
		defer r.noteKubeadmKeepsFlag(r.kubelet.SandboxArgs[len(r.kubelet.SandboxArgs)-1].Origin())
	} else {
		defer r.noteKubeadmKeepsFlag(extra[len(extra)-1].Origin())
	}
	// After the command line's findings: the fix names first the flag
	// that stops the kubelet now. Each document's, each its own line.
	defer func() {
		for _, e := range extra {
			r.kubeadmExtraArg(e, kubeletVer, rejects, rejected)
		}
	}()
	if r.kubelet == nil || len(r.kubelet.SandboxArgs) == 0 {
		return
	}
	var cands []Candidate
	for _, a := range r.kubelet.SandboxArgs {
		cands = append(cands, r.add(candidateOf(a, SourceKubeletFlags, RoleKubeletProtects)))
	}
	eff := cands[len(cands)-1]
	effAt := r.kubelet.SandboxArgs[len(cands)-1]
	for i := range len(cands) - 1 {
		r.note(withOrigin(cands[i].Origin, Note{Kind: KindKubeletFlagOverridden, Component: nodeversion.Kubelet}), "--%s at %s is overridden by the one at %s", config.KubeletSandboxFlag, cands[i].Origin, eff.Origin)
	}
	switch {
	case rejected:
		for i, c := range cands {
			at := r.kubelet.SandboxArgs[i]
			r.conflict(withOrigin(at.Origin(), Note{Kind: KindKubeletRejectsFlag, Component: nodeversion.Kubelet, Version: kubeletVer}), c, Candidate{}, rejects, kubeletVer, config.KubeletSandboxFlag, at.Key, at.Origin())
			r.offerConflict(rankStops, Fix{Action: ActionRemove})
		}
		return
	case ignored:
		kn := withOrigin(eff.Origin, Note{Kind: KindKubeletIgnoresFlag, Component: nodeversion.Kubelet, Version: kubeletVer})
		r.note(kn, ignores, kubeletVer, config.KubeletSandboxFlag, eff.Origin, effAt.Path)
		if r.winner.Image != "" && r.relate(eff.Image, r.winner.Image) == relDiffer {
			kn.Kind = KindKubeletFlagDiffers
			r.note(kn, "--%s=%s (%s) differs from the runtime's %s (%s)", config.KubeletSandboxFlag, eff.Image, eff.Origin, r.winner.Image, r.winner.Origin)
		}
		return
	case !known:
		r.note(withOrigin(eff.Origin, Note{Kind: KindKubeletFlagSet, Component: nodeversion.Kubelet}),
			"--%s (%s) was removed in kubelet 1.35, which then does not start: remove it from %s before upgrading "+
				"(the kubelet's version is unknown)", config.KubeletSandboxFlag, eff.Origin, effAt.Path)
	}
	if r.winner.Image == "" {
		return
	}
	change := fmt.Sprintf("set the flag in %s to %s, or remove it", effAt.Path, r.winner.Image)
	if !known {
		// Right at every version: before 1.29 the kubelet then protects
		// its built-in default, from 1.29 on it ignores the flag, and from
		// 1.35 on it does not start with it.
		change = fmt.Sprintf("remove the flag from %s (kubelet 1.29 to 1.34 ignore it, and 1.35 and later do not start with it)", effAt.Path)
	}
	differs := r.compare(withOrigin(eff.Origin, Note{Kind: KindKubeletFlagDiffers, Component: nodeversion.Kubelet, Version: kubeletVer}), eff, r.winner,
		fmt.Sprintf("the kubelet protects %s from image garbage collection (--%s at %s) but %s starts sandboxes with %s (%s): "+
			"the sandbox image may be deleted; %s",
			eff.Image, config.KubeletSandboxFlag, eff.Origin, r.runtime, r.winner.Image, r.winner.Origin, change))
	if differs && known {
		r.offerConflict(rankOther, Fix{Action: ActionEdit, To: r.winner.Image})
	} else if differs {
		r.offerConflict(rankOther, Fix{Action: ActionRemove})
	}
}

// kubeadmExtraArg checks --pod-infra-container-image in kubeadm's
// kubeletExtraArgs at extra: a conflict when the kubelet rejects the flag
// (with the note rejects of KubeletRejectsFlag), else a note.
func (r *resolver) kubeadmExtraArg(extra config.Found, kubeletVer, rejects string, rejected bool) {
	c := r.add(candidateOf(extra, SourceKubeadmConfig, RoleKubeletProtects))
	key := extra.Key
	if rejected {
		r.conflict(withOrigin(c.Origin, Note{Kind: KindKubeletRejectsFlag, Component: nodeversion.Kubelet, Version: kubeletVer}), c, Candidate{},
			rejects+" (kubeadm writes it into kubeadm-flags.env at its next init or join)", kubeletVer, config.KubeletSandboxFlag, key, c.Origin)
		r.offerConflict(rankStops, Fix{Action: ActionRemove})
		return
	}
	r.note(withOrigin(c.Origin, Note{Kind: KindKubeletFlagSet, Component: nodeversion.Kubelet, Version: kubeletVer}),
		"kubeadm writes --%s=%s (%s) into kubeadm-flags.env at its next init or join; kubelet 1.35 and later do not start with it: remove it from %s",
		config.KubeletSandboxFlag, extra.Value, c.Origin, key)
}

// checkKubeadm compares kubeadm's expected pause image with the runtime's.
func (r *resolver) checkKubeadm() {
	kv := r.kubeadmVer.Version
	var repo *config.Found
	if r.kubeadm != nil {
		repo = r.kubeadm.ImageRepository
		if kv == "" && r.kubeadm.KubernetesVersion != nil {
			kv = r.kubeadm.KubernetesVersion.Value
			at := r.kubeadm.KubernetesVersion.Origin()
			r.res.Versions = append(r.res.Versions, ComponentVersion{Component: nodeversion.Kubeadm, Version: kv,
				Origin: "kubernetesVersion at " + at, Used: true, Assumed: true})
			r.note(withOrigin(at, Note{Kind: KindVersionAssumed, Component: nodeversion.Kubeadm, Version: kv}),
				"kubeadm's version is unknown; kubernetesVersion %s (%s) was assumed: kubeadm's pause tag is compiled into the kubeadm binary", kv, at)
		}
	}
	if kv == "" {
		if repo != nil {
			r.note(withOrigin(repo.Origin(), Note{Kind: KindVersionUnknown, Component: nodeversion.Kubeadm}), "imageRepository %s (%s) is set but kubeadm's version is unknown: its pause image cannot be told", repo.Value, repo.Origin())
		}
		return
	}
	repoVal := ""
	if repo != nil {
		repoVal = repo.Value
	}
	img, err := KubeadmPauseImage(kv, repoVal)
	if err != nil {
		r.note(withOrigin("", Note{Kind: KindVersionUnknown, Component: nodeversion.Kubeadm, Version: kv}), "kubeadm %s: %v", kv, err)
		return
	}
	c := Candidate{Image: img, Source: SourceKubeadmDefault, Origin: "default of kubeadm " + kv + r.kubeadmVer.From(), Role: RoleInstallerPulls}
	if repo != nil {
		c.Source, c.Origin = SourceKubeadmConfig, repo.Origin()
	}
	c = r.add(c)
	r.kubeadmCand = &c
	r.upgradeRunsPause(kv, c)
	if r.winner.Image == "" {
		return
	}
	change := "set imageRepository in the kubeadm ClusterConfiguration to match"
	if repo != nil {
		change = "change imageRepository at " + repo.Origin()
	}
	where := r.winner.Origin
	if r.winner.Source == SourceRuntimeDefault || r.winner.Source == SourceRuntimeInfo {
		where = "the " + string(r.runtime) + " config"
		// The live report agrees with a file: name its line (a
		// cri-dockerd unit's ExecStart, seen in TestLiveCRIDockerd of
		// examples/preflight).
		if r.fileCand != nil && r.fileCand.Image == r.winner.Image {
			where = r.fileCand.Origin
		}
	}
	k := withOrigin(c.Origin, Note{Kind: KindKubeadmDiffers, Component: nodeversion.Kubeadm, Version: kv})
	if r.relate(c.Image, r.winner.Image) == relDiffer && !r.notOlder(r.winner.Image, img) {
		// The runtime moves forward only: kubeadm's image is older than
		// the one in use (or not comparable with it), and writing it would
		// downgrade the sandbox of every new pod.
		r.note(k, "kubeadm %s pre-pulls and expects %s but %s starts sandboxes with %s (%s), which is not older: "+
			"the runtime keeps its image; kubeadm's pre-flight warns and its pre-pull fetches an image the runtime does not use "+
			"(%s; an offline node needs both, see the pre-pull list)", kv, img, r.runtime, r.winner.Image, r.winner.Origin, change)
		return
	}
	differs := r.compare(k, c, r.winner, fmt.Sprintf("kubeadm %s pre-pulls and expects %s but %s starts sandboxes with %s (%s): "+
		"an offline node lacks the runtime's image and %s; set the sandbox image at %s to %s, or %s",
		kv, img, r.runtime, r.winner.Image, r.winner.Origin, r.kubeadmSees(), where, img, change))
	if differs {
		r.editSandbox(rankOther, KindKubeadmDiffers, img)
		r.retargetKubeletFlag(r.winner.Image, img)
	}
}

// notOlder reports whether the image to is not older than from: their
// tags are versions (3.9, 3.10.1) and to's is the same or later. An image
// with a digest, or a tag that is no version, is not comparable: false.
func (r *resolver) notOlder(from, to string) bool {
	a, errA := r.norm.Parse(from)
	b, errB := r.norm.Parse(to)
	if errA != nil || errB != nil || a.Digest() != "" || b.Digest() != "" {
		return false
	}
	va, errA := parseVersion(a.Tag())
	vb, errB := parseVersion(b.Tag())
	return errA == nil && errB == nil && !vb.Less(va)
}

// retargetKubeletFlag makes the kubelet flag's fix follow the runtime when
// another fix moves the runtime from the image in use to to: one
// precedence, the runtime's image after the fixes, so that the
// kubelet-flag-differs and kubeadm-differs fixes of one node agree.
func (r *resolver) retargetKubeletFlag(from, to string) {
	for i, f := range r.res.Fixes {
		if f.Answers != KindKubeletFlagDiffers || f.Action != ActionEdit || f.To != from {
			continue
		}
		g := f
		g.To = to
		g.Message = fmt.Sprintf("set --%s at %s to %s, the image %s uses once the kubeadm-differs fix moves it from %s, or remove the flag",
			config.KubeletSandboxFlag, f.Where(), to, r.runtime, from)
		r.res.Fixes[i] = g
		if r.res.Fix != nil && *r.res.Fix == f {
			r.res.Fix = &g
		}
	}
}

// checkReferences reports candidate images that are not valid references.
func (r *resolver) checkReferences() {
	seen := map[string]bool{}
	for _, c := range r.res.Candidates {
		if c.Image == "" || seen[c.Image+c.Origin] || strings.Contains(c.Image, "$") {
			continue
		}
		seen[c.Image+c.Origin] = true
		if _, err := r.norm.Parse(c.Image); err != nil {
			refuses := ""
			if c.Source == SourceCRIOConfig {
				// pkg/config ParsePauseImage, v1.36.3; seen live.
				refuses = "CRI-O refuses to start with it; "
			}
			r.conflict(withOrigin(c.Origin, Note{Kind: KindInvalidReference}), c, Candidate{}, "%s at %s is not a valid image reference (%v): %scorrect it", c.Image, c.Origin, err, refuses)
			r.offerConflict(rankStops, Fix{Action: ActionEdit})
		}
	}
}

// pinsAndPrepull fills Pins and Prepull.
func (r *resolver) pinsAndPrepull() {
	addPin := func(s string) {
		if s != "" && !slices.Contains(r.res.Pins, s) {
			r.res.Pins = append(r.res.Pins, s)
		}
	}
	addPin(r.res.SandboxImage)
	switch r.runtime {
	case runtimeContainerd:
		if r.ctr != nil {
			for _, p := range r.ctr.Pinned {
				addPin(p.Value)
			}
		}
	case runtimeCRIO:
		if r.crio != nil {
			for _, p := range r.crio.Pinned {
				addPin(p.Value)
			}
		}
	case runtimeCRIDockerd:
		r.cridPrepull = r.criDockerdPins()
	}
	r.prepull()
}

// prepull fills Prepull with every exact string that a consumer on this node
// will look up: the runtime starts sandboxes with its sandbox image as
// configured, kubeadm checks and pulls its pause image as it names it, and
// the runtime pins its exact pinned images by name. Each is looked up by
// exact name (containerd 2.x, CRI-O and cri-dockerd compare raw strings;
// kubeadm too), so two spellings of one image are both listed; only
// identical strings are merged. A pair of spellings of one image gets a note
// on pulling it once and storing it under both names. A string reported as
// not a valid reference (a KindInvalidReference conflict, which says where
// to correct it) names no image to pull, and is left out.
func (r *resolver) prepull() {
	add := func(s string) {
		if s != "" && !strings.Contains(s, "$") && !slices.Contains(r.res.Prepull, s) && !r.res.invalidReference(s) {
			r.res.Prepull = append(r.res.Prepull, s)
		}
	}
	add(r.res.SandboxImage)
	if r.kubeadmCand != nil {
		add(r.kubeadmCand.Image)
	}
	switch r.runtime {
	case runtimeContainerd:
		if r.ctr != nil {
			for _, p := range r.ctr.Pinned {
				add(p.Value) // pinned_images values are references
			}
		}
	case runtimeCRIO:
		if r.crio != nil {
			for _, p := range r.crio.Pinned {
				if !strings.Contains(p.Value, "*") {
					add(p.Value) // an exact pattern; globs name no image to pull
				}
			}
		}
	case runtimeCRIDockerd:
		for _, p := range r.cridPrepull {
			add(p) // exact --pinned-images entries that can match
		}
	}
	for i, a := range r.res.Prepull {
		for _, b := range r.res.Prepull[i+1:] {
			if how := r.sameImage(a, b); how != "" {
				r.note(withOrigin("", Note{Kind: KindPrepullTwoNames}), "pre-pull: %s and %s are one image under two names (%s), and each is looked up by its exact name: "+
					"pull it once and store it under both, %s", a, b, how, r.storeTwiceHint(a, b))
			}
		}
	}
}

// sameImage says how a and b name one image ("a registry alias", "one with
// a digest") or returns "" when they may name different images.
func (r *resolver) sameImage(a, b string) string {
	ra, errA := r.norm.Parse(a)
	rb, errB := r.norm.Parse(b)
	switch {
	case errA != nil || errB != nil:
		return ""
	case r.norm.Equal(a, b):
		return "a registry alias"
	case r.norm.Equal(ra.Name()+":"+ra.Tag(), rb.Name()+":"+rb.Tag()) && (ra.Digest() == "") != (rb.Digest() == ""):
		return "the same tag, one with a digest"
	}
	return ""
}

// storeTwiceHint says how to store the image pulled as a under the name b
// too, with the tool of the node's runtime.
func (r *resolver) storeTwiceHint(a, b string) string {
	ctr := fmt.Sprintf("`ctr -n k8s.io images pull %s && ctr -n k8s.io images tag %s %s` (containerd)", a, a, b)
	skopeo := fmt.Sprintf("`skopeo copy containers-storage:%s containers-storage:%s` after pulling %s (CRI-O, whose image store is containers-storage)", a, b, a)
	switch r.runtime {
	case runtimeContainerd:
		return "e.g. " + ctr
	case runtimeCRIO:
		return "e.g. " + skopeo
	case runtimeCRIDockerd:
		return fmt.Sprintf("e.g. `docker pull %s && docker tag %s %s` (cri-dockerd)", a, a, b)
	}
	return "e.g. " + ctr + " or " + skopeo
}
