package config

import (
	"errors"
	"io/fs"
	"path"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/sandboxpin/sandboxpin/resolve/internal/nodefs"
	"github.com/sandboxpin/sandboxpin/resolve/internal/yamlfile"
)

// k3sUnits are the systemd units that run k3s's or RKE2's agent, which
// runs their containerd, by flavor (as ContainerdLocations names it): the
// server's first. k3s's install.sh writes k3s.service or
// k3s-agent.service; RKE2's packages and install script install
// rke2-server.service and rke2-agent.service.
func k3sUnits(flavor string) []string {
	switch flavor {
	case "k3s":
		return []string{"k3s.service", "k3s-agent.service"}
	case "RKE2":
		return []string{"rke2-server.service", "rke2-agent.service"}
	}
	return nil
}

// k3sPauseFlags are the spellings of the pause-image flag: k3s's
// pkg/cli/cmds/agent.go (PauseImageFlag, "pause-image", no environment
// variable; read at 00cc29ba2779) and RKE2's pkg/cli/cmds/root.go (at
// v1.36.3+rke2r1, read for remedy's editGenerated) both take it from the
// command line, where urfave/cli, through Go's flag package, takes
// -pause-image as --pause-image. A config.yaml key of the same name is
// inserted before the command line's flags (pkg/configfilearg/parser.go,
// Parse, at f646604010af), so the command line wins.
func k3sPauseFlags() []string { return []string{"--pause-image", "-pause-image"} }

// ReadK3sPauseImage returns the pause image k3s or RKE2 (flavor "k3s" or
// "RKE2") will write into the containerd config they generate at their
// next start, and the command line systemd runs for their unit (the first
// of k3sUnits that has an ExecStart=): the --pause-image on that command
// line, else the pause-image key of their config files (readK3sConfig);
// nil when neither sets it (their built-in default). Without a unit (a
// node image, a unit elsewhere) the default config files are read, and
// the Command is nil.
func ReadK3sPauseImage(fsys fs.FS, flavor string) (*Found, *Command, error) {
	for _, unit := range k3sUnits(flavor) {
		c, err := ReadCommand(fsys, unit)
		if err != nil {
			return nil, nil, err
		}
		if c == nil || c.ExecStart == nil {
			continue
		}
		if f := c.Flag(k3sPauseFlags()...); f != nil && f.Value != "" {
			return f, c, nil
		}
		f, err := readK3sConfig(fsys, strings.ToLower(flavor), c)
		return f, c, err
	}
	f, err := readK3sConfig(fsys, strings.ToLower(flavor), nil)
	return f, nil, err
}

// readK3sConfig returns the last pause-image of k3s's or RKE2's (prog)
// config files, as pkg/configfilearg reads them (parser.go and
// defaultparser.go at f646604010af): the file $K3S_CONFIG_FILE names
// (RKE2_CONFIG_FILE for RKE2), else the command line's --config or -c,
// else /etc/rancher/PROG/config.yaml; then the files of the directory of
// that name with ".d" appended, by name, whose names end in .yaml or .yml
// in any case; a later file's key wins. Only a file's first YAML
// document counts, as yaml.v2's Unmarshal reads it.
func readK3sConfig(fsys fs.FS, prog string, c *Command) (*Found, error) {
	main := "/etc/rancher/" + prog + "/config.yaml"
	if f := c.Flag("--config", "-c"); f != nil {
		main = f.Value
	}
	if f := c.Lookup(strings.ToUpper(prog) + "_CONFIG_FILE"); f != nil && f.Value != "" {
		main = f.Value
	}
	name := fsPathOrEmpty(main)
	if name == "" {
		return nil, nil
	}
	names := []string{name}
	entries, err := fs.ReadDir(fsys, name+".d")
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nodefs.Invalid(nodefs.NodePath(name+".d"), "", 0, err)
	}
	for _, e := range entries {
		if n := strings.ToLower(e.Name()); !e.IsDir() && (strings.HasSuffix(n, ".yaml") || strings.HasSuffix(n, ".yml")) {
			names = append(names, path.Join(name+".d", e.Name()))
		}
	}
	var last *Found
	for _, n := range names {
		b, err := nodefs.ReadFile(fsys, n)
		if err != nil {
			return nil, err
		}
		if b == nil {
			continue
		}
		p := nodefs.NodePath(n)
		var file yamlfile.File
		docs, _, err := file.Parse(b, 1)
		if err != nil {
			return nil, nodefs.Invalid(p, "", yamlfile.ErrorLine(err), err)
		}
		if len(docs) == 0 || len(docs[0].Content) == 0 {
			continue
		}
		root := docs[0].Content[0]
		if root.Kind != yaml.MappingNode {
			continue
		}
		for i := 0; i+1 < len(root.Content); i += 2 {
			k, v := root.Content[i], root.Content[i+1]
			if k.Value != "pause-image" {
				continue
			}
			if v.Kind != yaml.ScalarNode {
				return nil, nodefs.Invalid(p, "pause-image", yamlfile.Line(b, 1, v.Line), errors.New("pause-image is not a string"))
			}
			last = &Found{Value: v.Value, Path: p, Line: yamlfile.Line(b, 1, v.Line), Key: "pause-image"}
		}
	}
	if last != nil && last.Value == "" {
		return nil, nil
	}
	return last, nil
}
