package resolve

import (
	"slices"
	"strings"

	"github.com/sandboxpin/sandboxpin/pin"
	"github.com/sandboxpin/sandboxpin/reference"
	"github.com/sandboxpin/sandboxpin/resolve/internal/config"
	"github.com/sandboxpin/sandboxpin/resolve/internal/releases"
)

// pinnedEntry is one entry of a cri-dockerd list flag and the flag's
// value it was written in.
type pinnedEntry struct {
	value string // as written, untrimmed (pin.Compile trims it as cri-dockerd does)
	at    config.Found
}

// criDockerdEntries splits the values of one cri-dockerd list flag into
// their entries (config.PinnedListEntries: comma-separated or repeated);
// a value that cannot be read as a pflag StringSlice reads it is noted
// and left out.
func (r *resolver) criDockerdEntries(values []config.Found) []pinnedEntry {
	var out []pinnedEntry
	for _, f := range values {
		entries, err := config.PinnedListEntries([]string{f.Value})
		if err != nil {
			r.note(withOrigin(f.Origin(), Note{Kind: KindUnitNote, Component: runtimeCRIDockerd, Location: locationOf(f)}),
				"%s=%s at %s cannot be read as a comma-separated list (%v): it was left out; cri-dockerd may refuse it", f.Flag, f.Value, f.Origin(), err)
			continue
		}
		for _, e := range entries {
			out = append(out, pinnedEntry{value: e, at: f})
		}
	}
	return out
}

// criDockerdPins reads cri-dockerd's --pinned-images and
// --pinned-image-labels (releases.CRIDockerdPinsFlags: cri-dockerd 0.4.7
// and later, cri-dockerd#571). On such a release, or on one of unknown
// version whose unit sets them (no earlier release has the flags), it
// sets PinMode to pin.ModeCRIDockerdCompat, appends the --pinned-images
// entries to Pins (after the sandbox image, even an entry equal to it, as
// [Result.RuntimeMatcher] reads them) and the labels to PinLabels, and
// reports the entries no name Docker lists can match and those spelled
// through an alias. It returns the exact entries to pre-pull.
func (r *resolver) criDockerdPins() (prepull []string) {
	if r.runtime != runtimeCRIDockerd {
		return nil
	}
	var images, labels []pinnedEntry
	var at Location
	origin := ""
	if r.crid != nil {
		images, labels = r.criDockerdEntries(r.crid.PinnedImages), r.criDockerdEntries(r.crid.PinnedImageLabels)
		if e := r.crid.ExecStart; e != nil {
			origin, at = e.Origin(), Location{Path: e.Path, Line: e.Line, Key: e.Key}
		}
	}
	set := len(images)+len(labels) > 0
	n := withOrigin(origin, Note{Kind: KindCRIDockerdPinsFlags, Component: runtimeCRIDockerd, Version: r.runtimeVer, Location: at})
	if v, err := parseVersion(r.runtimeVer); err == nil {
		note, ok := releases.CRIDockerdPinsFlags.Holds(v)
		if !ok {
			if set {
				n.Kind = KindCRIDockerdNoPinFlags
				r.note(n, "cri-dockerd %s has no --pinned-images and no --pinned-image-labels (they arrived in 0.4.7, cri-dockerd#571): "+
					"the values at %s pin nothing; upgrade cri-dockerd to 0.4.7 or later, or remove them", r.runtimeVer, origin)
			}
			return nil
		}
		r.note(n, note, r.runtimeVer)
	} else {
		if !set {
			return nil
		}
		r.note(n, releases.CRIDockerdPinsFlags.Note(), "(of unknown version: its unit sets --pinned-images or --pinned-image-labels, which only 0.4.7 and later have)")
	}
	r.res.PinMode = pin.ModeCRIDockerdCompat
	seen := map[string]bool{}
	for _, e := range images {
		if seen[e.value] {
			continue
		}
		seen[e.value] = true
		r.res.Pins = append(r.res.Pins, e.value)
		if r.checkPinnedEntry(e) {
			prepull = append(prepull, strings.TrimSpace(e.value))
		}
	}
	for _, e := range labels {
		if strings.TrimSpace(e.value) != "" && !slices.Contains(r.res.PinLabels, e.value) {
			r.res.PinLabels = append(r.res.PinLabels, e.value)
		}
	}
	return prepull
}

// checkPinnedEntry reports a --pinned-images entry that can never match
// (pin.CRIDockerdNeverMatches: Docker lists familiar names), with a fix
// that writes the name Docker lists, or one spelled through a registry
// alias, which pins only while Docker stores that very name. It reports
// whether e names one image to pre-pull: an exact name that can match.
func (r *resolver) checkPinnedEntry(e pinnedEntry) (exact bool) {
	s := strings.TrimSpace(e.value)
	if s == "" {
		return false
	}
	prefix := strings.HasSuffix(s, "*")
	if reason, never := pin.CRIDockerdNeverMatches(s); never {
		a := Candidate{Image: s, Source: SourceCRIDockerdFlags, Origin: e.at.Origin(), Role: RoleRuntimeUses, Location: locationOf(e.at)}
		to := ""
		if l := dockerListed(s); !prefix && l != s {
			to = l
		}
		write := ""
		if to != "" {
			write = "; write " + to + " there, as `docker images` shows it"
		}
		r.conflict(withOrigin(a.Origin, Note{Kind: KindCRIDockerdPinNeverMatches, Component: runtimeCRIDockerd, Version: r.runtimeVer}), a, Candidate{},
			"cri-dockerd never pins %s=%s (%s): %s%s", e.at.Flag, s, a.Origin, reason, write)
		if to != "" {
			r.offerConflict(rankOther, Fix{Action: ActionEdit, To: to})
		}
		return false
	}
	if prefix {
		return false
	}
	plain, err := reference.Parse(s)
	if err != nil {
		return false
	}
	if ref, err := r.norm.Parse(s); err == nil && ref.Name() != plain.Name() {
		to := dockerListed(ref.String())
		if !criDockerdExact(s) {
			to = dockerListed(ref.Name())
		}
		r.note(withOrigin(e.at.Origin(), Note{Kind: KindCRIDockerdPinAlias, Component: runtimeCRIDockerd, Version: r.runtimeVer, Location: locationOf(e.at)}),
			"%s=%s (%s) is spelled through a registry alias: cri-dockerd compares raw strings, so it pins the image only while Docker stores it "+
				"under that very name, not when it is stored as %s; write the name `docker images` shows there", e.at.Flag, s, e.at.Origin(), to)
	}
	return criDockerdExact(s)
}

// criDockerdExact reports whether cri-dockerd compares the entry s whole
// (it has an "@", or a ":" after its last "/"), rather than as a bare
// repository: pin.ModeCRIDockerdCompat's rule.
func criDockerdExact(s string) bool {
	return strings.Contains(s, "@") || strings.Contains(s[strings.LastIndexByte(s, '/')+1:], ":")
}

// dockerListed returns the name Docker lists for the entry s, its familiar
// form ("nginx:1.27" for "docker.io/library/nginx:1.27"; a bare repository
// stays bare), or "" when s is no reference or that name too can never
// match.
func dockerListed(s string) string {
	ref, err := reference.Parse(s)
	if err != nil {
		return ""
	}
	f := ref.Familiar()
	if !criDockerdExact(s) {
		f = strings.TrimSuffix(f, ":"+ref.Tag())
	}
	if _, never := pin.CRIDockerdNeverMatches(f); never {
		return ""
	}
	return f
}
