package config

import "io/fs"

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

// ReadK3sPauseImage returns the --pause-image on the command line systemd
// runs for k3s's or RKE2's unit (flavor "k3s" or "RKE2"; the first of
// k3sUnits whose unit has an ExecStart=), from which they write the
// sandbox image of the containerd config they generate at every start,
// and that command line; nil, nil when no such unit exists, and a nil
// Found when its command line has no --pause-image.
func ReadK3sPauseImage(fsys fs.FS, flavor string) (*Found, *Command, error) {
	for _, unit := range k3sUnits(flavor) {
		c, err := ReadCommand(fsys, unit)
		if err != nil {
			return nil, nil, err
		}
		if c == nil || c.ExecStart == nil {
			continue
		}
		f := c.Flag(k3sPauseFlags()...)
		if f != nil && f.Value == "" {
			f = nil
		}
		return f, c, nil
	}
	return nil, nil, nil
}
