package resolve

import (
	"github.com/sandboxpin/sandboxpin/resolve/internal/config"
	"github.com/sandboxpin/sandboxpin/resolve/internal/nodefs"
)

// Setting is a value that the runtime's command line gives (its systemd
// unit's ExecStart=, drop-ins and environment files, as systemd runs it),
// and where it is written: the ExecStart= line, or the line that assigns
// the variable the value comes from.
type Setting struct {
	// Value is the value as the runtime receives it.
	Value string `json:"value"`
	// Location is where it is written (flattened into the JSON object).
	Location
}

// RuntimeCommand is what the runtime's command line says about its
// configuration, where it overrides the files Resolve reads by default.
type RuntimeCommand struct {
	// Config is the main config file that containerd's or CRI-O's
	// --config names (containerd reads it instead of
	// /etc/containerd/config.toml, CRI-O instead of /etc/crio/crio.conf;
	// "" for CRI-O: none), nil when the command line names none.
	Config *Setting `json:"config,omitempty"`
	// ConfigDir is CRI-O's --config-dir, which it reads instead of
	// /etc/crio/crio.conf.d; nil when the command line names none.
	ConfigDir *Setting `json:"configDir,omitempty"`
	// PauseImage is CRI-O's --pause-image (or CONTAINER_PAUSE_IMAGE),
	// which overrides every file's pause_image, cri-dockerd's
	// --pod-infra-container-image, or k3s's or RKE2's
	// --pause-image (else the pause-image of their config.yaml and
	// config.yaml.d), from which they write their containerd config at
	// every start; nil when none sets it.
	PauseImage *Setting `json:"pauseImage,omitempty"`
}

func settingOf(f *config.Found) *Setting {
	if f == nil {
		return nil
	}
	return &Setting{Value: f.Value, Location: locationOf(*f)}
}

// readContainerdConfigs reads the containerd configs where
// config.ContainerdLocationsOn says they are, with the --pause-image of k3s
// and RKE2 for theirs.
func (r *resolver) readContainerdConfigs(b *nodefs.Budget) error {
	locs, err := config.ContainerdLocationsOn(b.Source())
	if err := b.First(err); err != nil {
		return err
	}
	for _, loc := range locs {
		c, err := config.ReadContainerd(b.Source(), loc.Path, loc.Flavor)
		if err := b.First(err); err != nil {
			return err
		}
		if c == nil {
			if loc.From != nil {
				r.conflict(withOrigin(loc.From.Origin(), Note{Kind: KindConfigMistake, Component: runtimeContainerd}),
					Candidate{Source: SourceContainerdConfig, Origin: loc.From.Origin(), Role: RoleRuntimeUses, Location: locationOf(*loc.From)}, Candidate{},
					"%s: containerd's command line names the config file %s, which does not exist: containerd does not start", loc.From.Where(), loc.From.Value)
				r.offerConflict(rankOther, Fix{Action: ActionEdit})
			}
			continue
		}
		c.ConfigFlag = loc.From
		if loc.Flavor != "" {
			pause, cmd, err := config.ReadK3sPauseImage(b.Source(), loc.Flavor)
			if err := b.First(err); err != nil {
				return err
			}
			c.PauseFlag = pause
			if cmd != nil {
				for _, n := range cmd.Notes {
					r.note(withOrigin(cmd.Files[0], Note{Kind: KindUnitNote, Component: runtimeContainerd}), "%s", n)
				}
			}
		}
		r.ctrs = append(r.ctrs, c)
	}
	return nil
}

// commandSettings records what the runtime's command line says in
// Result.RuntimeCommand, and checks k3s's or RKE2's --pause-image against
// the containerd config they wrote from it at their last start.
func (r *resolver) commandSettings() {
	var rc RuntimeCommand
	switch {
	case r.runtime == runtimeContainerd && r.ctr != nil:
		rc.Config, rc.PauseImage = settingOf(r.ctr.ConfigFlag), settingOf(r.ctr.PauseFlag)
		if f := r.ctr.PauseFlag; f != nil {
			prog := map[string]string{"k3s": "k3s", "RKE2": "rke2"}[r.ctr.Flavor]
			flag := r.add(candidateOf(*f, SourceContainerdConfig, RoleRuntimeUses))
			if r.fileCand != nil && r.compare(r.rt(KindRuntimeNotRestarted, flag.Origin), flag, *r.fileCand,
				"pause-image "+f.Value+" at "+f.Where()+" is what "+prog+" writes into "+r.fileCand.Origin+" at its next start, "+
					"which holds "+r.fileCand.Image+": "+prog+" was not restarted since; restart it, or change the value at "+flag.Origin) {
				r.offerConflict(rankOther, Fix{Action: ActionRestart, Component: r.runtime})
			}
		}
	case r.runtime == runtimeCRIDockerd && r.crid != nil:
		rc.PauseImage = settingOf(r.crid.PauseImage)
	case r.runtime == runtimeCRIO && r.crio != nil:
		rc.Config, rc.ConfigDir, rc.PauseImage = settingOf(r.crio.Config), settingOf(r.crio.ConfigDir), settingOf(r.crio.PauseFlag)
		if p, f := r.crio.FilePause, r.crio.PauseFlag; p != nil && f != nil && f.Value != "" && p.Value != f.Value {
			r.note(r.rt(KindUnitNote, f.Origin()), "pause_image = %q at %s is overridden by %s on CRI-O's command line (%s): CRI-O uses %s",
				p.Value, p.Origin(), f.Value, f.Where(), f.Value)
		}
	}
	if rc != (RuntimeCommand{}) {
		r.res.RuntimeCommand = &rc
	}
}
