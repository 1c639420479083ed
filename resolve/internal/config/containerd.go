package config

import (
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/sandboxpin/sandboxpin/resolve/internal/nodefs"
	"github.com/sandboxpin/sandboxpin/resolve/internal/tomlfile"
)

// containerd plugin IDs that hold the sandbox image, per config version.
const (
	ctrCRIv1     = "cri"                       // version 1: [plugins.cri]
	ctrCRIv2     = "io.containerd.grpc.v1.cri" // version 2: [plugins."io.containerd.grpc.v1.cri"]
	ctrImagesV3  = "io.containerd.cri.v1.images"
	ctrRuntimeV3 = "io.containerd.cri.v1.runtime"
	ctrGRPCv4    = "io.containerd.server.v1.grpc" // version 4: the gRPC socket's address
)

// Loader says whose config loading ReadContainerd models: the file
// versions differ in meaning between containerd releases.
type Loader int

const (
	// LoaderAuto picks Loader23 for a version 4 main file (only containerd
	// 2.3 and later accept it) and LoaderPre23 otherwise.
	LoaderAuto Loader = iota
	// LoaderPre23 is containerd 1.x and 2.0–2.2 (highest config version 3):
	// a version 3 file is used as written, so its
	// [plugins."io.containerd.grpc.v1.cri"] sandbox_image is ignored.
	LoaderPre23
	// Loader23 is containerd 2.3 and later (version.ConfigVersion = 4 in
	// version/version.go at v2.3.7 and v2.4.2): LoadConfigWithPlugins in
	// cmd/containerd/server/config/config.go migrates every file below
	// version 4 one step at a time and runs each plugin's ConfigMigration at
	// each step; the CRI images plugin's (plugins/cri/images/plugin.go,
	// configMigration) now runs for configVersion 3 too, so sandbox_image
	// under [plugins."io.containerd.grpc.v1.cri"] of a version 1, 2 or 3
	// file becomes pinned_images.sandbox, overriding that file's own
	// pinned_images.sandbox. Seen live with `containerd config dump` on
	// 2.3.7 and 2.4.2 (2.2.9 ignores it), and by what 2.3.7 pins.
	Loader23
)

// maxImports bounds the number of files one containerd config may pull in.
const maxImports = 256

// ContainerdLocation is a place a containerd config.toml lives.
type ContainerdLocation struct {
	Path   string // fs path
	Flavor string // "" for a plain containerd, "k3s", "RKE2"
	From   *Found // the --config on containerd's command line that names Path; nil for the default
}

// containerdUnit is containerd's systemd unit, as containerd's
// repository (containerd.service) and the distributions' packages name it.
const containerdUnit = "containerd.service"

// ContainerdLocationsOn is ContainerdLocations on the node fsys: the
// plain containerd's config is the file containerd.service's command line
// names with --config or -c (ReadCommand), else the default. containerd
// reads only that file (cmd/containerd/command/main.go: the "config"
// flag, alias "c", default /etc/containerd/config.toml; read at v1.7.34
// and v2.4.0-beta.0, the nearest tags in the mirror to v1.7.35 and
// v2.4.2); urfave/cli parses flags with Go's flag package, which takes
// -config as --config. A config path that is not absolute is read from
// the root, containerd's working directory unless the unit says
// otherwise.
func ContainerdLocationsOn(fsys fs.FS) ([]ContainerdLocation, error) {
	locs := ContainerdLocations()
	c, err := ReadCommand(fsys, containerdUnit)
	if err != nil {
		return nil, err
	}
	if f := c.Flag(containerdConfigFlags()...); f != nil {
		if name, ok := nodefs.FSPath(f.Value); ok && name != "." {
			locs[len(locs)-1] = ContainerdLocation{Path: name, From: f}
		}
	}
	return locs, nil
}

// containerdConfigFlags are the spellings of containerd's config flag.
func containerdConfigFlags() []string { return []string{"--config", "-config", "-c", "--c"} }

// ContainerdLocations lists, in order of preference when several exist,
// where containerd configs live: RKE2 and k3s run their own containerd and
// generate its config, and their kubelet uses it.
func ContainerdLocations() []ContainerdLocation {
	return []ContainerdLocation{
		{Path: "var/lib/rancher/rke2/agent/etc/containerd/config.toml", Flavor: "RKE2"},
		{Path: "var/lib/rancher/k3s/agent/etc/containerd/config.toml", Flavor: "k3s"},
		{Path: "etc/containerd/config.toml"},
	}
}

// PinnedEntry is one pinned_images entry of a version-3 config.
type PinnedEntry struct {
	Name string // map key; "sandbox" is the pause image
	Found
}

// Containerd is what a containerd config file and its imports say.
type Containerd struct {
	Path     string        // main file, node path
	Flavor   string        // "", "k3s", "RKE2"
	Version  int           // version of the main file (1 when not set)
	Files    []string      // every file read, in containerd's order
	Sandbox  *Found        // effective sandbox image; nil when no file sets it
	Migrated bool          // Sandbox is a version 1/2 sandbox_image that containerd 2.x migrates in memory
	Pinned   []PinnedEntry // version 3 pinned_images after merging, by key
	Ignored  []Problem     // values containerd ignores
	Problems []Problem     // mistakes that stop containerd or that it reports
	Disabled *Found        // the disabled_plugins entry that turns CRI off, if any
	Socket   *Found        // the gRPC socket's address; nil when no file sets it
	Loader   Loader        // LoaderPre23 or Loader23: whose loading was modelled
	// ConfigFlag is the --config on containerd's command line that names
	// Path (ContainerdLocationsOn), nil for the default; PauseFlag is
	// k3s's or RKE2's --pause-image (ReadK3sPauseImage), from which they
	// write Sandbox at every start. The caller sets both.
	ConfigFlag, PauseFlag *Found
	// PausePullOff lists the runtime handlers whose disable_pause_image_pull
	// is true (version 3 and 4 files), by handler name: containerd 2.4 and
	// later then do not pull the sandbox image for their pods.
	PausePullOff []HandlerSetting
}

// HandlerSetting is a setting of one runtime handler.
type HandlerSetting struct {
	Handler string // the handler's name: runc, kata, ...
	Found
}

// ReadContainerd reads the containerd config at name (an fs path) and its
// imports as containerd 2.x's LoadConfig does: breadth first, each file
// once; a file whose version is lower than the main file's is migrated to it
// (so its sandbox_image becomes pinned_images.sandbox), a higher one stops
// containerd. Scalars of later files override earlier ones unless empty,
// tables merge by key.
// It returns nil, nil when name does not exist. The version rules are those
// of containerd 2.0–2.2 unless the main file has version 4, which only 2.3
// and later read: see ReadContainerdAs.
func ReadContainerd(fsys fs.FS, name, flavor string) (*Containerd, error) {
	return ReadContainerdAs(fsys, name, flavor, LoaderAuto)
}

// ReadContainerdAs is ReadContainerd with the loading of loader: with
// Loader23 every file below version 4 is migrated to 4 on its own (no
// version mismatch between files stops containerd), and a
// version 1–3 sandbox_image becomes pinned_images.sandbox.
func ReadContainerdAs(fsys fs.FS, name, flavor string, loader Loader) (*Containerd, error) {
	b, err := nodefs.ReadFile(fsys, name)
	if b == nil || err != nil {
		return nil, err
	}
	cfg := &Containerd{Path: nodefs.NodePath(name), Flavor: flavor}
	pinned := map[string]Found{}
	pausePull := map[string]Found{} // handler -> its disable_pause_image_pull, true or false
	loaded := map[string]bool{}
	pending := []string{name}
	first := true
	left := maxTOMLEntriesPerSource
	for len(pending) > 0 {
		name, pending = pending[0], pending[1:]
		if loaded[name] {
			continue
		}
		loaded[name] = true
		if len(loaded) > maxImports {
			return nil, nodefs.Invalid(cfg.Path, "imports", 0, fmt.Errorf("more than %d files imported", maxImports))
		}
		if !first {
			if b, err = nodefs.ReadFile(fsys, name); err != nil {
				return nil, err
			}
			if b == nil {
				// resolveImports found it, but it vanished or is a directory.
				continue
			}
		}
		doc, err := parseTOML(name, b, tomlfile.GoTOML, &left)
		if err != nil {
			return nil, err
		}
		cfg.Files = append(cfg.Files, doc.path)
		v, err := containerdVersion(doc)
		if err != nil {
			return nil, err
		}
		if first {
			cfg.Version = v
			first = false
			if loader == LoaderAuto {
				loader = LoaderPre23
				if v >= 4 {
					loader = Loader23
				}
			}
			cfg.Loader = loader
		} else if v > cfg.Version && loader == LoaderPre23 {
			cfg.Problems = append(cfg.Problems, Problem{
				At: Found{Path: doc.path, Line: doc.line("version"), Key: "version"},
				Msg: fmt.Sprintf("%s has version = %d, higher than version = %d of %s: containerd 1.x and 2.0–2.2 refuse to start "+
					"(2.2.9: \"expected containerd config version equal to or less than `3`\"); use the same version in both files",
					doc.path, v, cfg.Version, cfg.Path),
			})
			continue
		}
		if err := cfg.socket(doc, v); err != nil {
			return nil, err
		}
		extract := cfg.extract
		if cfg.Loader == Loader23 {
			extract = cfg.extract23
		}
		if err := extract(doc, v, pinned); err != nil {
			return nil, err
		}
		if err := cfg.pausePull(doc, v, pausePull); err != nil {
			return nil, err
		}
		imports, err := containerdImports(fsys, doc, name)
		if err != nil {
			return nil, err
		}
		for _, im := range imports {
			if im.missing {
				cfg.Problems = append(cfg.Problems, Problem{At: im.at,
					Msg: fmt.Sprintf("%s imports %q, which does not exist: containerd fails to start; "+
						"create it or remove it from imports", im.at.Origin(), im.at.Value)})
				continue
			}
			pending = append(pending, im.name)
		}
	}
	if len(pinned) > 0 {
		keys := make([]string, 0, len(pinned))
		for k := range pinned {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			cfg.Pinned = append(cfg.Pinned, PinnedEntry{Name: k, Found: pinned[k]})
		}
		if s, ok := pinned["sandbox"]; ok && (cfg.Version >= 3 || cfg.Loader == Loader23) {
			cfg.Sandbox = &s
		}
	}
	for _, h := range slices.Sorted(maps.Keys(pausePull)) {
		if at := pausePull[h]; at.Value == "true" {
			cfg.PausePullOff = append(cfg.PausePullOff, HandlerSetting{Handler: h, Found: at})
		}
	}
	return cfg, nil
}

// pausePull records each runtime handler's disable_pause_image_pull of a
// version 3 or 4 file into off, a later file's value overriding an earlier
// one's: [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.NAME]
// (internal/cri/config/config.go Runtime.DisablePauseImagePull, toml
// "disable_pause_image_pull", @v2.4.0-beta.0, @v2.4.2; containerd#13424).
// The value's Found has Value "true" or "false".
func (cfg *Containerd) pausePull(doc *tomlDoc, v int, off map[string]Found) error {
	if v < 3 {
		return nil
	}
	keys := []string{"plugins", ctrRuntimeV3, "containerd", "runtimes"}
	tbl, ok, err := doc.table(keys...)
	if err != nil || !ok {
		return err
	}
	for h := range tbl {
		k := append(slices.Clone(keys), h, "disable_pause_image_pull")
		val, ok := doc.lookup(k...)
		if !ok {
			continue
		}
		b, isBool := val.(bool)
		if !isBool {
			return nodefs.Invalid(doc.path, tomlfile.Key(k...), doc.line(k...), fmt.Errorf("want a boolean, got %s", tomlfile.TypeName(val)))
		}
		off[h] = Found{Value: strconv.FormatBool(b), Path: doc.path, Line: doc.line(k...), Key: tomlfile.Key(k...)}
	}
	return nil
}

func containerdVersion(doc *tomlDoc) (int, error) {
	v, ok := doc.lookup("version")
	if !ok {
		return 1, nil
	}
	n, isInt := v.(int64)
	if !isInt || n < 1 || n > 4 {
		return 0, nodefs.Invalid(doc.path, "version", doc.line("version"),
			fmt.Errorf("want 1, 2, 3 or 4, got %v", v))
	}
	return int(n), nil
}

// extract records what one file (of config version v) says into cfg.
func (cfg *Containerd) extract(doc *tomlDoc, v int, pinned map[string]Found) error {
	if err := cfg.extractDisabled(doc, v); err != nil {
		return err
	}
	// The sandbox_image key for this file's version, and the ones it ignores.
	criID, wrongIDs := ctrCRIv2, []string{ctrCRIv1}
	switch v {
	case 1:
		criID, wrongIDs = ctrCRIv1, nil
	case 3:
		criID, wrongIDs = "", []string{ctrCRIv2, ctrCRIv1}
	}
	err := cfg.ignore(doc, wrongIDs, func(at Found, id string) string {
		switch {
		case v == 3 && id == ctrCRIv2:
			return fmt.Sprintf("%s: containerd 2.0–2.2 ignore sandbox_image under [plugins.%q] in a version 3 config, "+
				"but 2.3 and later migrate it to pinned_images.sandbox, where it overrides; "+
				"move the value to sandbox under [plugins.%q.pinned_images]", at.Where(), id, ctrImagesV3)
		case v == 3:
			return fmt.Sprintf("%s: containerd 2.x ignores sandbox_image under [plugins.%q] in a version 3 config; "+
				"move the value to sandbox under [plugins.%q.pinned_images]", at.Where(), id, ctrImagesV3)
		}
		return fmt.Sprintf("%s: containerd ignores [plugins.%q] in a version %d config; "+
			"move sandbox_image to [plugins.%q]", at.Where(), id, v, ctrCRIv2)
	})
	if err != nil {
		return err
	}
	if criID == "" {
		return cfg.extractPinned(doc, pinned)
	}
	at, err := cfg.sandboxImage(doc, criID)
	if err != nil || at == nil {
		return err
	}
	if cfg.Version >= 3 {
		pinned["sandbox"] = *at // a version 1/2 drop-in of a version 3 config is migrated
	} else {
		cfg.Sandbox = at
	}
	cfg.Migrated = true
	return nil
}

// ignore records as Ignored the [plugins.ID] sandbox_image of doc for each
// of ids, with the message msg gives.
func (cfg *Containerd) ignore(doc *tomlDoc, ids []string, msg func(at Found, id string) string) error {
	for _, id := range ids {
		at, err := doc.strAt("plugins", id, "sandbox_image")
		if err != nil {
			return err
		}
		if at != nil {
			cfg.Ignored = append(cfg.Ignored, Problem{At: *at, Msg: msg(*at, id)})
		}
	}
	return nil
}

// sandboxImage returns the [plugins.ID] sandbox_image of doc that
// containerd reads; nil when it is not set, or set empty (a Problem).
func (cfg *Containerd) sandboxImage(doc *tomlDoc, id string) (*Found, error) {
	at, err := doc.strAt("plugins", id, "sandbox_image")
	if err != nil || at == nil || at.Value != "" {
		return at, err
	}
	cfg.Problems = append(cfg.Problems, Problem{At: *at,
		Msg: at.Where() + ": sandbox_image is empty; set it or remove the key to use the default"})
	return nil, nil
}

// extractPinned records a file's pinned_images table into pinned.
func (cfg *Containerd) extractPinned(doc *tomlDoc, pinned map[string]Found) error {
	keys := []string{"plugins", ctrImagesV3, "pinned_images"}
	tbl, ok, err := doc.table(keys...)
	if err != nil || !ok {
		return err
	}
	for k, val := range tbl {
		s, isStr := val.(string)
		ek := append(slices.Clone(keys), k)
		if !isStr {
			return nodefs.Invalid(doc.path, tomlfile.Key(ek...), doc.line(ek...), fmt.Errorf("want a string, got %s", tomlfile.TypeName(val)))
		}
		at := Found{Value: s, Path: doc.path, Line: doc.line(ek...), Key: tomlfile.Key(ek...)}
		if s == "" {
			if k == "sandbox" {
				cfg.Problems = append(cfg.Problems, Problem{At: at,
					Msg: at.Where() + ": pinned_images.sandbox is empty; set it or remove the key to use the default"})
			}
			continue // like mergo: an empty value does not override
		}
		pinned[k] = at
		if k == "sandbox" {
			cfg.Migrated = false
		}
	}
	return nil
}

// extract23 records what one file (of config version v) says into cfg as
// containerd 2.3 and later load it (see Loader23): the file's
// pinned_images, then, below version 4, the migrated sandbox_image on top.
func (cfg *Containerd) extract23(doc *tomlDoc, v int, pinned map[string]Found) error {
	if err := cfg.extractDisabled(doc, v); err != nil {
		return err
	}
	before, hadSandbox := pinned["sandbox"]
	if err := cfg.extractPinned(doc, pinned); err != nil {
		return err
	}
	own, ownSandbox := pinned["sandbox"]
	ownSandbox = ownSandbox && (!hadSandbox || own != before)
	// The sandbox_image key migrated for this file's version (v1Migrate
	// renames "cri" to io.containerd.grpc.v1.cri first), and those ignored.
	criID, wrongIDs := ctrCRIv2, []string{ctrCRIv1}
	switch v {
	case 1:
		criID, wrongIDs = ctrCRIv1, nil
	case 4:
		criID, wrongIDs = "", []string{ctrCRIv2, ctrCRIv1}
	}
	err := cfg.ignore(doc, wrongIDs, func(at Found, id string) string {
		if v >= 4 {
			return fmt.Sprintf("%s: containerd 2.3 and later ignore sandbox_image under [plugins.%q] in a version 4 config "+
				"(only files below version 4 are migrated); move the value to sandbox under [plugins.%q.pinned_images]",
				at.Where(), id, ctrImagesV3)
		}
		return fmt.Sprintf("%s: containerd ignores [plugins.%q] in a version %d config; move sandbox_image to [plugins.%q]",
			at.Where(), id, v, ctrCRIv2)
	})
	if err != nil || criID == "" {
		return err
	}
	at, err := cfg.sandboxImage(doc, criID)
	if err != nil || at == nil {
		return err
	}
	if ownSandbox && own.Value != at.Value {
		cfg.Problems = append(cfg.Problems, Problem{At: *at,
			Msg: fmt.Sprintf("%s: containerd 2.3 and later migrate this version %d sandbox_image to pinned_images.sandbox, "+
				"where it overrides %s (%s); remove one of the two keys", at.Where(), v, own.Value, own.Origin())})
	}
	pinned["sandbox"] = *at
	cfg.Migrated = true
	return nil
}

// extractDisabled records a disabled_plugins entry that turns CRI off.
func (cfg *Containerd) extractDisabled(doc *tomlDoc, v int) error {
	dis, ok, err := doc.strs("disabled_plugins")
	if err != nil || !ok {
		return err
	}
	for _, p := range dis {
		if p == ctrCRIv1 && v == 1 || p == ctrCRIv2 || v >= 3 && (p == ctrImagesV3 || p == ctrRuntimeV3) {
			cfg.Disabled = &Found{Value: p, Path: doc.path, Line: doc.line("disabled_plugins"), Key: "disabled_plugins"}
		}
	}
	return nil
}

// socket records the gRPC address one file of version v sets: [grpc]
// address below version 4, [plugins."io.containerd.server.v1.grpc"] address
// in version 4 (cmd/containerd/server/config/config.go, serviceMigrate, at
// v2.3.7: a version 3 [grpc] address is moved there unless that plugin table
// is set; version 4 ignores [grpc]).
func (cfg *Containerd) socket(doc *tomlDoc, v int) error {
	var keys []string
	plugin := []string{"plugins", ctrGRPCv4, "address"}
	legacy := []string{"grpc", "address"}
	switch {
	case v >= 4:
		keys = plugin
	case cfg.Loader == Loader23:
		if _, set := doc.lookup("plugins", ctrGRPCv4); set {
			keys = plugin
		} else {
			keys = legacy
		}
	default:
		keys = legacy
	}
	at, err := doc.strAt(keys...)
	if err == nil && at != nil && at.Value != "" {
		cfg.Socket = at
	}
	return err
}

// containerdImport is one resolved entry of a file's imports.
type containerdImport struct {
	name    string // fs path
	missing bool   // a plain path that does not exist
	at      Found  // the imports entry, for messages
}

// containerdImports resolves doc's imports like containerd: relative paths
// are relative to the importing file's directory; a path with '*' is a glob
// (sorted), any other path must exist.
func containerdImports(fsys fs.FS, doc *tomlDoc, name string) ([]containerdImport, error) {
	list, ok, err := doc.strs("imports")
	if err != nil || !ok {
		return nil, err
	}
	line := doc.line("imports")
	var out []containerdImport
	for _, im := range list {
		at := Found{Value: im, Path: doc.path, Line: line, Key: "imports"}
		p := im
		if !strings.HasPrefix(p, "/") {
			p = path.Join(path.Dir(nodefs.NodePath(name)), p)
		}
		fp, valid := nodefs.FSPath(p)
		if !valid || fp == "." {
			return nil, nodefs.Invalid(doc.path, "imports", line, fmt.Errorf("import %q is not a file path", im))
		}
		if strings.Contains(fp, "*") {
			matches, err := fs.Glob(fsys, fp)
			if err != nil {
				return nil, nodefs.Invalid(doc.path, "imports", line, fmt.Errorf("import %q: %w", im, err))
			}
			for _, m := range matches {
				out = append(out, containerdImport{name: m, at: at})
			}
			continue
		}
		if _, err := fs.Stat(fsys, fp); err != nil {
			out = append(out, containerdImport{name: fp, missing: true, at: at})
			continue
		}
		out = append(out, containerdImport{name: fp, at: at})
	}
	return out, nil
}
