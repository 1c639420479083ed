package resolve

import (
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
)

// containerd plugin IDs that hold the sandbox image, per config version.
const (
	ctrCRIv1     = "cri"                       // version 1: [plugins.cri]
	ctrCRIv2     = "io.containerd.grpc.v1.cri" // version 2: [plugins."io.containerd.grpc.v1.cri"]
	ctrImagesV3  = "io.containerd.cri.v1.images"
	ctrRuntimeV3 = "io.containerd.cri.v1.runtime"
)

// maxImports bounds the number of files one containerd config may pull in.
const maxImports = 256

// containerdLocation is a place a containerd config.toml lives.
type containerdLocation struct {
	path   string // fs path
	flavor string // "" for a plain containerd, "k3s", "RKE2"
}

// containerdLocations lists, in order of preference when several exist,
// where containerd configs live: RKE2 and k3s run their own containerd and
// generate its config, and their kubelet uses it.
func containerdLocations() []containerdLocation {
	return []containerdLocation{
		{"var/lib/rancher/rke2/agent/etc/containerd/config.toml", "RKE2"},
		{"var/lib/rancher/k3s/agent/etc/containerd/config.toml", "k3s"},
		{"etc/containerd/config.toml", ""},
	}
}

// pinnedEntry is one pinned_images entry of a version-3 config.
type pinnedEntry struct {
	Name string // map key; "sandbox" is the pause image
	found
}

// problem is a configuration mistake with one side: it becomes a Conflict
// with a zero B.
type problem struct {
	at  found
	msg string
}

// containerdConfig is what a containerd config file and its imports say.
type containerdConfig struct {
	Path     string        // main file, node path
	Flavor   string        // "", "k3s", "RKE2"
	Version  int           // version of the main file (1 when not set)
	Files    []string      // every file read, in containerd's order
	Sandbox  *found        // effective sandbox image; nil when no file sets it
	Migrated bool          // Sandbox is a version 1/2 sandbox_image that containerd 2.x migrates in memory
	Pinned   []pinnedEntry // version 3 pinned_images after merging, by key
	Ignored  []problem     // values containerd ignores
	Problems []problem     // mistakes that stop containerd or that it reports
	Disabled *found        // the disabled_plugins entry that turns CRI off, if any
}

// readContainerd reads the containerd config at name (an fs path) and its
// imports as containerd 2.x's LoadConfig does: breadth first, each file
// once; a file whose version is lower than the main file's is migrated to it
// (so its sandbox_image becomes pinned_images.sandbox), a higher one stops
// containerd. Scalars of later files override earlier ones unless empty,
// tables merge by key. It returns nil, nil when name does not exist.
func readContainerd(fsys fs.FS, name, flavor string) (*containerdConfig, error) {
	b, err := readFile(fsys, name)
	if b == nil || err != nil {
		return nil, err
	}
	cfg := &containerdConfig{Path: nodePath(name), Flavor: flavor}
	pinned := map[string]found{}
	loaded := map[string]bool{}
	pending := []string{name}
	first := true
	for len(pending) > 0 {
		name, pending = pending[0], pending[1:]
		if loaded[name] {
			continue
		}
		loaded[name] = true
		if len(loaded) > maxImports {
			return nil, configErr(cfg.Path, "imports", 0, fmt.Errorf("more than %d files imported", maxImports))
		}
		if !first {
			if b, err = readFile(fsys, name); err != nil {
				return nil, err
			}
			if b == nil {
				// resolveImports found it, but it vanished or is a directory.
				continue
			}
		}
		doc, err := parseTOML(nodePath(name), b)
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
		} else if v > cfg.Version {
			cfg.Problems = append(cfg.Problems, problem{
				at: found{Path: doc.path, Line: doc.line("version"), Key: "version"},
				msg: fmt.Sprintf("%s has version = %d, higher than version = %d of %s: containerd 2.x refuses to start "+
					"(\"drop-in config version higher than root config version\"); use the same version in both files",
					doc.path, v, cfg.Version, cfg.Path),
			})
			continue
		}
		if err := cfg.extract(doc, v, pinned); err != nil {
			return nil, err
		}
		imports, err := containerdImports(fsys, doc, name)
		if err != nil {
			return nil, err
		}
		for _, im := range imports {
			if im.missing {
				cfg.Problems = append(cfg.Problems, problem{at: im.at,
					msg: fmt.Sprintf("%s imports %q, which does not exist: containerd fails to start; "+
						"create it or remove it from imports", im.at.origin(), im.at.Value)})
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
			cfg.Pinned = append(cfg.Pinned, pinnedEntry{Name: k, found: pinned[k]})
		}
		if s, ok := pinned["sandbox"]; ok && cfg.Version >= 3 {
			cfg.Sandbox = &s
		}
	}
	return cfg, nil
}

func containerdVersion(doc *tomlDoc) (int, error) {
	v, ok := doc.lookup("version")
	if !ok {
		return 1, nil
	}
	n, isInt := v.(int64)
	if !isInt || n < 1 || n > 3 {
		return 0, configErr(doc.path, "version", doc.line("version"),
			fmt.Errorf("want 1, 2 or 3, got %v", v))
	}
	return int(n), nil
}

// extract records what one file (of config version v) says into cfg.
func (cfg *containerdConfig) extract(doc *tomlDoc, v int, pinned map[string]found) error {
	if dis, ok, err := doc.strs("disabled_plugins"); err != nil {
		return err
	} else if ok {
		for _, p := range dis {
			if p == ctrCRIv1 && v == 1 || p == ctrCRIv2 || v >= 3 && (p == ctrImagesV3 || p == ctrRuntimeV3) {
				cfg.Disabled = &found{Value: p, Path: doc.path, Line: doc.line("disabled_plugins"), Key: "disabled_plugins"}
			}
		}
	}
	// The sandbox_image key for this file's version, and the ones it ignores.
	criID, wrongIDs := ctrCRIv2, []string{ctrCRIv1}
	switch v {
	case 1:
		criID, wrongIDs = ctrCRIv1, nil
	case 3:
		criID, wrongIDs = "", []string{ctrCRIv2, ctrCRIv1}
	}
	for _, id := range wrongIDs {
		keys := []string{"plugins", id, "sandbox_image"}
		s, ok, err := doc.str(keys...)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		at := found{Value: s, Path: doc.path, Line: doc.line(keys...), Key: displayKey(keys...)}
		var msg string
		if v == 3 {
			msg = fmt.Sprintf("%s: containerd 2.x ignores sandbox_image under [plugins.%q] in a version 3 config; "+
				"move the value to sandbox under [plugins.%q.pinned_images]", at.where(), id, ctrImagesV3)
		} else {
			msg = fmt.Sprintf("%s: containerd ignores [plugins.%q] in a version %d config; "+
				"move sandbox_image to [plugins.%q]", at.where(), id, v, ctrCRIv2)
		}
		cfg.Ignored = append(cfg.Ignored, problem{at: at, msg: msg})
	}
	if criID != "" {
		keys := []string{"plugins", criID, "sandbox_image"}
		s, ok, err := doc.str(keys...)
		if err != nil {
			return err
		}
		if ok {
			at := found{Value: s, Path: doc.path, Line: doc.line(keys...), Key: displayKey(keys...)}
			switch {
			case s == "":
				cfg.Problems = append(cfg.Problems, problem{at: at,
					msg: at.where() + ": sandbox_image is empty; set it or remove the key to use the default"})
			case cfg.Version >= 3:
				// A version 1/2 drop-in of a version 3 config is migrated.
				pinned["sandbox"] = at
				cfg.Migrated = true
			default:
				cfg.Sandbox = &at
				cfg.Migrated = true
			}
		}
		return nil
	}
	keys := []string{"plugins", ctrImagesV3, "pinned_images"}
	tbl, ok, err := doc.table(keys...)
	if err != nil || !ok {
		return err
	}
	for k, val := range tbl {
		s, isStr := val.(string)
		ek := append(slices.Clone(keys), k)
		if !isStr {
			return configErr(doc.path, displayKey(ek...), doc.line(ek...), fmt.Errorf("want a string, got %T", val))
		}
		at := found{Value: s, Path: doc.path, Line: doc.line(ek...), Key: displayKey(ek...)}
		if s == "" {
			if k == "sandbox" {
				cfg.Problems = append(cfg.Problems, problem{at: at,
					msg: at.where() + ": pinned_images.sandbox is empty; set it or remove the key to use the default"})
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

// containerdImport is one resolved entry of a file's imports.
type containerdImport struct {
	name    string // fs path
	missing bool   // a plain path that does not exist
	at      found  // the imports entry, for messages
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
		at := found{Value: im, Path: doc.path, Line: line, Key: "imports"}
		p := im
		if !strings.HasPrefix(p, "/") {
			p = path.Join(path.Dir(nodePath(name)), p)
		}
		fp, valid := fsPath(p)
		if !valid || fp == "." {
			return nil, configErr(doc.path, "imports", line, fmt.Errorf("import %q is not a file path", im))
		}
		if strings.Contains(fp, "*") {
			matches, err := fs.Glob(fsys, fp)
			if err != nil {
				return nil, configErr(doc.path, "imports", line, fmt.Errorf("import %q: %w", im, err))
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
