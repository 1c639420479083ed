package releases

import (
	"fmt"
	"time"
)

// containerdReleases is where containerd's support windows were read: the
// table of RELEASES.md lists each minor's status, start and end of life.
const containerdReleases = "RELEASES.md support table @v2.4.2: "

// supportEnds holds, per minor release line, the last day upstream supports
// it. Value is a date, "2026-11-06", or a month, "2026-09", where upstream
// names only the month: support then lasts through that month. A line
// after the last row is unknown, not a guess.
var supportEnds = []Row{
	{Containerd, Range{"1.5", "1.6"}, "2023-02-28", containerdReleases + "1.5 End of Life, February 28, 2023"},
	{Containerd, Range{"1.6", "1.7"}, "2025-08-23", containerdReleases + "1.6 End of Life, August 23, 2025"},
	{Containerd, Range{"1.7", "1.8"}, "2026-09", containerdReleases + "1.7 LTS, \"September 2026\": by the committers until March 10, 2026, " +
		"then by two named owners, focused on Kubernetes 1.30 to 1.32 on Google Kubernetes Engine"},
	{Containerd, Range{"2.0", "2.1"}, "2027-03", containerdReleases + "2.0 LTS, \"March, 2027\": by the committers until November 7, 2025, " +
		"then by two named owners, focused on Kubernetes 1.33 on Google Kubernetes Engine"},
	{Containerd, Range{"2.1", "2.2"}, "2026-07-03", containerdReleases + "2.1 End of Life, July 3, 2026"},
	{Containerd, Range{"2.2", "2.3"}, "2026-11-06", containerdReleases + "2.2 Active, November 6, 2026"},
	{Containerd, Range{"2.3", "2.4"}, "2028-04-30", containerdReleases + "2.3 LTS, April 30, 2028"},
	{Containerd, Range{"2.4", "2.5"}, "2027-05-16", containerdReleases + "2.4 Active, May 16, 2027"},
}

// supportRead is the day the support rows were read (containerd's
// RELEASES.md @v2.4.2, and the newest Kubernetes release the Go module
// proxy listed): what they say holds on that day, and end of life is
// judged at it unless the caller knows a later one.
const supportRead = "2026-12-06"

// SupportRead returns the day the support rows were read, at midnight UTC.
func SupportRead() time.Time {
	t, err := time.Parse(time.DateOnly, supportRead)
	if err != nil {
		panic(err) // a constant
	}
	return t
}

// kubernetesSupportRead is where the Kubernetes rows were read.
const kubernetesSupportRead = "content/en/releases/version-skew-policy.md (kubernetes/website 0637786b3): the project maintains release branches " +
	"for the three newest minors; the newest minor is 1.37: v1.37.2 is the newest release of k8s.io/kubernetes the Go module proxy lists " +
	"(2026-12-06), v1.38.0-beta.0 its newest pre-release"

// kubernetesSupport says which Kubernetes minors are supported: the three
// newest, counted from the newest release read. Value is "supported" or
// "unsupported". To add a release, move both bounds up by its minor.
var kubernetesSupport = []Row{
	{Kubernetes, Range{"", "1.35"}, "unsupported", kubernetesSupportRead},
	{Kubernetes, Range{"1.35", "1.38"}, "supported", kubernetesSupportRead},
}

// EndOfLife returns the last day upstream supports the minor release line
// of component that holds v, and the row it comes from. For example,
// EndOfLife("containerd", v2.2.10) is 2026-11-06. Where upstream names only
// a month, end is that month's last day and r.Value the month. A version
// no row covers is an error wrapping [ErrUnknownVersion]; Kubernetes has no
// rows here (see [KubernetesSupported]).
func EndOfLife(component string, v Version) (end time.Time, r Row, err error) {
	r, ok := lookup(supportEnds, component, v)
	if !ok {
		return time.Time{}, Row{}, fmt.Errorf("%s %s: %w: no end of support known for it", component, v, ErrUnknownVersion)
	}
	end, err = parseEnd(r.Value)
	if err != nil {
		panic(fmt.Sprintf("releases: support row %s %s: %v", r.Component, r.Range, err)) // TestSupportEnds parses them all
	}
	return end, r, nil
}

// parseEnd parses a support row's Value: a date, or a month, which ends on
// its last day.
func parseEnd(s string) (time.Time, error) {
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	t, err := time.Parse("2006-01", s)
	if err != nil {
		return time.Time{}, fmt.Errorf("end %q: want YYYY-MM-DD or YYYY-MM", s)
	}
	return t.AddDate(0, 1, -1), nil
}

// KubernetesSupported reports whether the Kubernetes project supports the
// minor of v, as one of its three newest minors when the newest release
// was read, and returns the row it comes from. For example,
// KubernetesSupported(v1.34.9) is false. A version after the newest minor
// read (a 1.38 pre-release) is an error wrapping [ErrUnknownVersion].
func KubernetesSupported(v Version) (bool, Row, error) {
	r, ok := lookup(kubernetesSupport, Kubernetes, v)
	if !ok {
		return false, Row{}, fmt.Errorf("kubernetes %s: %w: newer than the newest minor read", v, ErrUnknownVersion)
	}
	return r.Value == "supported", r, nil
}
