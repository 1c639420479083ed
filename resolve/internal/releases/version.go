package releases

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrUnknownVersion is wrapped by every error of this package: a malformed
// version, or one that no row covers. Package resolve exports it.
var ErrUnknownVersion = errors.New("unknown version")

// Version is a parsed release version: major.minor.patch and, for a
// pre-release, Pre ("rc.1"). A distribution's build of a release
// ("+k3s1", "-0ubuntu1") is that release: Build keeps its suffix, which
// ordering ([Version.Less], [Version.Same]) and String ignore; only a
// fact that a distribution's builds are known not to share looks at it
// (see buildFixes).
type Version struct {
	Major, Minor, Patch int
	Pre                 string // "alpha.N", "beta.N" or "rc.N"; "" for a release
	Build               string // the distribution's suffix as written ("-k3s2", "+rke2r1", "~ds1-1+deb12u3"); "" for none
}

// preWords are the pre-release words upstream tags use, in their order.
var preWords = [...]string{"alpha", "beta", "rc"}

// ParseVersion reads a version as nodes state it, with one rule for every
// component and row:
//
//	[v][epoch:]major.minor[.patch][pre-release][build]
//
// A pre-release is "-" or "~" (Debian's) and then alpha, beta or rc with
// an optional "." and number: "v1.35.0-rc.1", "v1.18.0-rc1", "2.0.0~rc.1-1"
// are pre-releases (rc.1) of their release. Anything else after the
// numbers is a distribution's build of the release (kept in Build, which
// ordering ignores):
// "+k3s1", "-k3s1", "-k3s1.36" (k3s/RKE2's builds of containerd),
// "+rke2r1", "~ds1-1+deb12u3", "-0ubuntu1", "-1.1" (a package revision),
// "+unknown", "-12-gabcdef0" (git describe). A dpkg epoch ("1:") is
// dropped. Every error wraps [ErrUnknownVersion].
func ParseVersion(s string) (Version, error) {
	in := s
	s = strings.TrimPrefix(strings.TrimPrefix(s, "v"), "V")
	if i := strings.IndexByte(s, ':'); i > 0 && strings.Trim(s[:i], "0123456789") == "" {
		s = s[i+1:] // a dpkg epoch
	}
	end := strings.IndexAny(s, "-+~")
	suffix := ""
	if end >= 0 {
		suffix, s = s[end:], s[:end]
	}
	nums := [3]int{}
	n := 0
	for rest, more := s, true; more; n++ {
		var p string
		p, rest, more = strings.Cut(rest, ".")
		if n == len(nums) {
			return Version{}, fmt.Errorf("%w: %q: want major.minor[.patch]", ErrUnknownVersion, in)
		}
		num, err := strconv.Atoi(p)
		if err != nil || num < 0 || p == "" || p[0] == '+' || (len(p) > 1 && p[0] == '0') || len(p) > 6 {
			return Version{}, fmt.Errorf("%w: %q: bad number %q", ErrUnknownVersion, in, p)
		}
		nums[n] = num
	}
	if n < 2 {
		return Version{}, fmt.Errorf("%w: %q: want major.minor[.patch]", ErrUnknownVersion, in)
	}
	if len(suffix) == 1 {
		return Version{}, fmt.Errorf("%w: %q: nothing after %q", ErrUnknownVersion, in, suffix)
	}
	pre, build := preRelease(suffix)
	return Version{Major: nums[0], Minor: nums[1], Patch: nums[2], Pre: pre, Build: build}, nil
}

// preRelease splits a version's suffix into the pre-release it states,
// "rc.1" for "-rc.1", "-rc1", "~rc1-1" or "-rc.1+build", and the
// distribution's build after it ("-1", "+build"); the whole suffix is the
// build when it states no pre-release.
func preRelease(suffix string) (pre, build string) {
	if suffix == "" || suffix[0] == '+' {
		return "", suffix
	}
	rest := suffix[1:]
	for _, w := range preWords {
		after, ok := strings.CutPrefix(rest, w)
		if !ok {
			continue
		}
		dot := strings.HasPrefix(after, ".")
		after = strings.TrimPrefix(after, ".")
		digits := len(after) - len(strings.TrimLeft(after, "0123456789"))
		if digits < len(after) && !strings.ContainsRune("-+~.", rune(after[digits])) {
			return "", suffix // "-rcfoo": not a pre-release word
		}
		build = after[digits:]
		num, err := strconv.Atoi(after[:digits])
		if err != nil || digits > 6 {
			num = 0
		}
		if canon := strconv.Itoa(num); dot && after[:digits] == canon {
			return rest[:len(w)+1+digits], build // "rc.1" as written: no allocation (the rows' bounds)
		}
		return w + "." + strconv.Itoa(num), build
	}
	return "", suffix
}

// Less reports whether v sorts before w. A pre-release sorts before its
// release, and pre-releases sort alpha.N < beta.N < rc.N, each by N, with a
// purely numeric one ("0") first, as in semver.
func (v Version) Less(w Version) bool {
	switch {
	case v.Major != w.Major:
		return v.Major < w.Major
	case v.Minor != w.Minor:
		return v.Minor < w.Minor
	case v.Patch != w.Patch:
		return v.Patch < w.Patch
	case v.Pre == "" || w.Pre == "":
		return v.Pre != "" && w.Pre == ""
	}
	return preLess(v.Pre, w.Pre)
}

// Same reports whether v and w are the same release or pre-release,
// whatever distribution built them.
func (v Version) Same(w Version) bool { return !v.Less(w) && !w.Less(v) }

// Before reports whether v sorts before the release major.minor.patch.
func (v Version) Before(major, minor, patch int) bool {
	return v.Less(Version{Major: major, Minor: minor, Patch: patch})
}

func (v Version) String() string {
	s := fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch)
	if v.Pre != "" {
		s += "-" + v.Pre
	}
	return s
}

// preLess orders pre-releases: "0" (a bound's lowest), then alpha.N,
// beta.N and rc.N, each by N.
func preLess(a, b string) bool {
	rank := func(p string) (int, int) {
		kind, n, _ := strings.Cut(p, ".")
		num, _ := strconv.Atoi(n)
		for i, w := range preWords {
			if kind == w {
				return i, num
			}
		}
		return -1, 0
	}
	ka, na := rank(a)
	kb, nb := rank(b)
	return ka < kb || ka == kb && na < nb
}

// Range is a span of versions: From (included) up to Until (left out).
// A bound is a version string, and its spelling says, for every row, how
// the pre-releases of its release fall (see [Range.Pre]): "1.7" is the
// start of 1.7, its pre-releases included (upstream's change predates
// them); "1.35.0-rc.0" is that pre-release (the first one read to have
// the change); "1.24.9" is that release, after its pre-releases (the
// change came during them, or they were not read). An empty bound is open.
type Range struct{ From, Until string }

// Contains reports whether v is in r. It panics on a malformed bound,
// a programmer's error in a table of this package (TestRows parses them all).
func (r Range) Contains(v Version) bool {
	if r.From != "" && v.Less(bound(r.From)) {
		return false
	}
	return r.Until == "" || v.Less(bound(r.Until))
}

// Pre says how r's start treats the pre-releases of its first release:
// docs/release-facts.md prints it for every row.
func (r Range) Pre() string {
	switch {
	case r.From == "":
		return "—"
	case strings.Count(r.From, ".") == 1:
		return "from the first pre-release of " + r.From + ".0"
	case bound(r.From).Pre != "":
		return "from " + r.From + ", the first pre-release read to have it"
	}
	return "from the release " + r.From + ": its pre-releases not covered"
}

// String is "1.6.22–1.7", "from 2.3.0-rc.0", "before 1.28".
func (r Range) String() string {
	switch {
	case r.From == "":
		return "before " + r.Until
	case r.Until == "":
		return "from " + r.From
	}
	return r.From + "–" + r.Until
}

// bound parses a Range bound; "1.7" is 1.7.0-0, below every pre-release.
func bound(s string) Version {
	v, err := ParseVersion(s)
	if err != nil {
		panic(fmt.Sprintf("releases: bound %q: %v", s, err))
	}
	if strings.Count(s, ".") == 1 && v.Pre == "" {
		v.Pre = "0"
	}
	return v
}
