package resolve

import (
	"time"

	"github.com/sandboxpin/sandboxpin/resolve/internal/nodeversion"
	"github.com/sandboxpin/sandboxpin/resolve/internal/releases"
)

// supportAsOf returns the day end of life is judged on: Options.Today's
// date in UTC, else the day the support rows were read
// (releases.SupportRead), so that a zero Options reads no clock.
func (r *resolver) supportAsOf() (day time.Time, given bool) {
	if r.opts.Today.IsZero() {
		return releases.SupportRead(), false
	}
	y, m, d := r.opts.Today.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC), true
}

// checkSupport notes, with kind KindEndOfLife, each component whose
// release line upstream no longer supports on Result.SupportAsOf: the
// runtime where the support rows know its line (containerd's RELEASES.md
// @v2.4.2), and the kubelet and kubeadm outside the Kubernetes minors the
// project supports (the three newest read). A version no row covers (a
// newer line, CRI-O, cri-dockerd) gets no note.
func (r *resolver) checkSupport() {
	day, given := r.supportAsOf()
	r.res.SupportAsOf = day
	on := day.Format(time.DateOnly)
	if !given {
		on += ", the day sandboxpin's support table was read"
	}
	if r.runtime != "" && r.runtimeVer != "" {
		if v, err := parseVersion(r.runtimeVer); err == nil {
			if end, row, err := releases.EndOfLife(string(r.runtime), v); err == nil && day.After(end) {
				r.note(withOrigin("", Note{Kind: KindEndOfLife, Component: r.runtime, Version: r.runtimeVer}),
					"%s %s is past its end of life: upstream supported its release line %s through %s (%s), and it is %s; "+
						"upgrade to a supported release line", r.runtime, r.runtimeVer, row.Range.From, end.Format(time.DateOnly), row.Read, on)
			}
		}
	}
	kubeadmVer, _, _ := r.kubeadmVersion()
	for _, c := range []struct {
		component Component
		version   string
	}{
		{nodeversion.Kubelet, r.kubeletVer.Version},
		{nodeversion.Kubeadm, kubeadmVer},
	} {
		v, err := parseVersion(c.version)
		if err != nil {
			continue
		}
		if ok, row, err := releases.KubernetesSupported(v); err == nil && !ok {
			r.note(withOrigin("", Note{Kind: KindEndOfLife, Component: c.component, Version: c.version}),
				"%s %s is past its end of life: its minor %d.%d is not among the three newest Kubernetes minors, which the project supports (%s); "+
					"upgrade to a supported minor", c.component, c.version, v.Major, v.Minor, row.Read)
		}
	}
}
