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

// Version is a parsed release version: major.minor[.patch][-pre][+build].
// A distribution suffix after the numbers ("~ds1", "+k3s1") is dropped; only
// a "-" suffix makes a pre-release.
type Version struct {
	Major, Minor, Patch int
	Pre                 string // "rc.1" for v1.31.0-rc.1; "" for a release
}

// ParseVersion accepts "1.31", "v1.31.2", "v1.31.0-rc.1", "1.7.20+k3s1",
// "1.6.20~ds1". Every error wraps [ErrUnknownVersion].
func ParseVersion(s string) (Version, error) {
	var v Version
	in := s
	s = strings.TrimPrefix(strings.TrimPrefix(s, "v"), "V")
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
		if err != nil || num < 0 || p == "" || (len(p) > 1 && p[0] == '0') || len(p) > 6 {
			return Version{}, fmt.Errorf("%w: %q: bad number %q", ErrUnknownVersion, in, p)
		}
		nums[n] = num
	}
	if n < 2 {
		return Version{}, fmt.Errorf("%w: %q: want major.minor[.patch]", ErrUnknownVersion, in)
	}
	v.Major, v.Minor, v.Patch = nums[0], nums[1], nums[2]
	if strings.HasPrefix(suffix, "-") {
		v.Pre = suffix[1:]
		if i := strings.IndexByte(v.Pre, '+'); i >= 0 {
			v.Pre = v.Pre[:i]
		}
		if v.Pre == "" {
			return Version{}, fmt.Errorf("%w: %q: empty pre-release", ErrUnknownVersion, in)
		}
	}
	return v, nil
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

// preLess orders pre-release names: a number, then "alpha.N", "beta.N",
// "rc.N", each by N; anything else sorts after them.
func preLess(a, b string) bool {
	rank := func(p string) (int, int) {
		if n, err := strconv.Atoi(p); err == nil {
			return -1, n
		}
		kind, n, _ := strings.Cut(p, ".")
		num, err := strconv.Atoi(n)
		if err != nil {
			num = 0
		}
		switch kind {
		case "alpha":
			return 0, num
		case "beta":
			return 1, num
		case "rc":
			return 2, num
		}
		return 3, num
	}
	ka, na := rank(a)
	kb, nb := rank(b)
	return ka < kb || ka == kb && na < nb
}

// Range is a span of versions: From (included) up to Until (left out). A
// bound is a version string: "1.7" is the start of 1.7, its pre-releases
// included; "1.24.9" is that release, after its pre-releases;
// "2.0.0-rc.3" that pre-release. An empty bound is open.
type Range struct{ From, Until string }

// Contains reports whether v is in r. It panics on a malformed bound,
// a programmer's error in a table of this package (TestRows parses them all).
func (r Range) Contains(v Version) bool {
	if r.From != "" && v.Less(bound(r.From)) {
		return false
	}
	return r.Until == "" || v.Less(bound(r.Until))
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
