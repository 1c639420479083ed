package config

import (
	"cmp"
	"fmt"
	"io/fs"
	"slices"

	"github.com/sandboxpin/sandboxpin/resolve/internal/nodefs"
	"github.com/sandboxpin/sandboxpin/resolve/internal/tomlfile"
)

// CRI-O's files and unit. Its flags, their environment variables (which
// urfave/cli reads when the flag is not on the command line) and
// defaults: internal/criocli/criocli.go at v1.36.3 ("config", alias "c",
// CONTAINER_CONFIG; "config-dir", alias "d", CONTAINER_CONFIG_DIR;
// "pause-image", CONTAINER_PAUSE_IMAGE; mergeConfigFiles reads the main
// file, unless --config is "", then the drop-in directory; a flag set
// overrides every file). The packaged unit, contrib/systemd/crio.service at
// v1.36.3, reads EnvironmentFile=-/etc/sysconfig/crio and passes
// $CRIO_CONFIG_OPTIONS, $CRIO_RUNTIME_OPTIONS, $CRIO_STORAGE_OPTIONS,
// $CRIO_NETWORK_OPTIONS and $CRIO_METRICS_OPTIONS (contrib/sysconfig/crio);
// Debian's packages name /etc/default/crio instead: ReadCommand reads
// whichever the unit names.
const (
	crioMain   = "etc/crio/crio.conf"
	crioDropIn = "etc/crio/crio.conf.d"
	crioUnit   = "crio.service"
)

// CRIO is what CRI-O's command line, crio.conf and its drop-ins say.
type CRIO struct {
	Files      []string // every file read, in CRI-O's order
	PauseImage *Found   // the pause image CRI-O uses: PauseFlag, else [crio.image] pause_image; nil when neither is set
	// PauseFlag is --pause-image on CRI-O's command line, or
	// CONTAINER_PAUSE_IMAGE in its unit's environment; FilePause is the
	// pause_image of the files, which PauseFlag overrides.
	PauseFlag, FilePause *Found
	// Config and ConfigDir are the --config and --config-dir (or
	// CONTAINER_CONFIG, CONTAINER_CONFIG_DIR) that name the files read;
	// nil for the defaults.
	Config, ConfigDir *Found
	Pinned            []Found // [crio.image] pinned_images of the last file that sets it
	PinnedSet         bool    // some file sets pinned_images (possibly to [])
	Problems          []Problem
}

// ReadCRIO reads CRI-O's configuration as CRI-O does: the main file
// (/etc/crio/crio.conf, or what --config names on the command line systemd
// runs for crio.service; none when that is ""), then every file under the
// drop-in directory (/etc/crio/crio.conf.d/, or --config-dir) recursively in
// lexical order (each directory's entries by name, a subdirectory's files
// where its name sorts): a key in a later file overrides the same key of
// an earlier one, and an array (pinned_images) replaces the earlier array
// entirely. A --pause-image on the command line (or CONTAINER_PAUSE_IMAGE in
// the unit's environment) overrides every file's pause_image. It returns
// nil, nil when none of these files exists and the command line sets
// none of these.
func ReadCRIO(fsys fs.FS) (*CRIO, error) {
	cmd, err := ReadCommand(fsys, crioUnit)
	if err != nil {
		return nil, err
	}
	setting := func(env string, flags ...string) *Found {
		if f := cmd.Flag(flags...); f != nil {
			return f
		}
		return cmd.Lookup(env)
	}
	conf := setting("CONTAINER_CONFIG", "--config", "-config", "-c")
	confDir := setting("CONTAINER_CONFIG_DIR", "--config-dir", "-config-dir", "-d")
	pause := setting("CONTAINER_PAUSE_IMAGE", "--pause-image", "-pause-image")
	var names []string
	main, dropIn := crioMain, crioDropIn
	if conf != nil {
		main = fsPathOrEmpty(conf.Value)
	}
	if main != "" {
		names = append(names, main)
	}
	if confDir != nil {
		dropIn = fsPathOrEmpty(confDir.Value)
	}
	if dropIn != "" {
		err = fs.WalkDir(fsys, dropIn, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if p == dropIn {
					return fs.SkipAll // no drop-in directory
				}
				return nodefs.Invalid(nodefs.NodePath(p), "", 0, err)
			}
			if !d.IsDir() {
				names = append(names, p)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	var cfg *CRIO
	if pause != nil || conf != nil || confDir != nil {
		cfg = &CRIO{PauseFlag: pause, Config: conf, ConfigDir: confDir}
	}
	left := maxTOMLEntriesPerSource
	for _, name := range names {
		b, err := nodefs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		if b == nil {
			continue
		}
		doc, err := parseTOML(name, b, tomlfile.BurntSushi, &left)
		if err != nil {
			return nil, err
		}
		if cfg == nil {
			cfg = &CRIO{}
		}
		cfg.Files = append(cfg.Files, doc.path)
		if err := cfg.extract(doc); err != nil {
			return nil, err
		}
	}
	if cfg != nil {
		if conf != nil && main != "" && !slices.Contains(cfg.Files, nodefs.NodePath(main)) {
			cfg.Problems = append(cfg.Problems, Problem{At: *conf, Msg: fmt.Sprintf("%s: CRI-O's command line names the config file %s, "+
				"which does not exist: CRI-O does not start", conf.Where(), conf.Value)})
		}
		cfg.FilePause = cfg.PauseImage
		if cfg.PauseFlag != nil && cfg.PauseFlag.Value != "" {
			cfg.PauseImage = cfg.PauseFlag
		}
		if len(cfg.Files) == 0 { // only the command line says anything
			cfg.Files = []string{cmp.Or(pause, conf, confDir).Path}
		}
	}
	return cfg, nil
}

// fsPathOrEmpty is the fs path of the node path p, "" for "" or the root.
func fsPathOrEmpty(p string) string {
	name, ok := nodefs.FSPath(p)
	if p == "" || !ok || name == "." {
		return ""
	}
	return name
}

// extract records what one file says into cfg: a later file's key
// overrides an earlier one's.
func (cfg *CRIO) extract(doc *tomlDoc) error {
	at, err := doc.strAt("crio", "image", "pause_image")
	switch {
	case err != nil:
		return err
	case at != nil && at.Value == "":
		cfg.Problems = append(cfg.Problems, Problem{At: *at,
			Msg: at.Where() + ": pause_image is empty; CRI-O needs a pause image: set it or remove the key"})
	case at != nil:
		cfg.PauseImage = at
	}
	keys := []string{"crio", "image", "pinned_images"}
	list, ok, err := doc.strs(keys...)
	if err != nil || !ok {
		return err
	}
	line := doc.line(keys...)
	cfg.PinnedSet = true
	cfg.Pinned = cfg.Pinned[:0:0]
	for _, p := range list {
		at := Found{Value: p, Path: doc.path, Line: line, Key: tomlfile.Key(keys...)}
		if p == "*" {
			cfg.Problems = append(cfg.Problems, Problem{At: at,
				Msg: fmt.Sprintf("%s: pinned_images entry \"*\" makes CRI-O panic at start-up; use \"**\" to pin everything or remove it",
					at.Where())})
			continue
		}
		cfg.Pinned = append(cfg.Pinned, at)
	}
	return nil
}
