package nodeversion

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/sandboxpin/sandboxpin/resolve/internal/nodefs"
)

// dpkgStatus is Debian's package database: one stanza per package
// (deb-status(5)).
const dpkgStatus = "var/lib/dpkg/status"

// dpkgPackage is one installed package of the dpkg status file.
type dpkgPackage struct {
	Name    string // Package
	Version string // Version, as dpkg states it ("1.6.20~ds1-1+deb12u3")
	Line    int    // 1-based line of the stanza's Version field
}

// parseDpkgStatus reads the installed packages that keep selects from the
// dpkg status file b. The format is
// deb822: stanzas separated by blank lines, each line "Field: value" or a
// continuation line that starts with a space or a tab. A package counts
// as installed when its Status is "install ok installed" or "hold ok
// installed" (a held package is installed too); other stanzas are skipped.
// A line that is neither a field nor a continuation, or a continuation
// with no field before it, is a *ConfigError naming its line, as dpkg
// refuses such a file. It runs in time linear in len(b) and keeps only the
// selected packages.
func parseDpkgStatus(b []byte, keep func(name string) bool) ([]dpkgPackage, error) {
	var out []dpkgPackage
	var cur dpkgPackage
	status, inStanza, haveField := "", false, false
	flush := func() {
		if cur.Name != "" && cur.Version != "" && installedStatus(status) && keep(cur.Name) {
			out = append(out, cur)
		}
		cur, status, inStanza, haveField = dpkgPackage{}, "", false, false
	}
	rest := b
	for line := 1; len(rest) > 0; line++ {
		raw := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			raw, rest = rest[:i], rest[i+1:]
		} else {
			rest = nil
		}
		raw = bytes.TrimSuffix(raw, []byte{'\r'})
		if len(bytes.Trim(raw, " \t")) == 0 {
			if inStanza {
				flush()
			}
			continue
		}
		inStanza = true
		if raw[0] == ' ' || raw[0] == '\t' {
			if !haveField {
				return nil, nodefs.Invalid(nodefs.NodePath(dpkgStatus), "", line, fmt.Errorf("continuation line %q starts a stanza", nodefs.Shorten(string(raw))))
			}
			continue // Description and Conffiles lines: not read
		}
		name, val, ok := bytes.Cut(raw, []byte{':'})
		if !ok || len(name) == 0 || bytes.ContainsAny(name, " \t") {
			return nil, nodefs.Invalid(nodefs.NodePath(dpkgStatus), "", line, fmt.Errorf("line %q is not a field (Name: value)", nodefs.Shorten(string(raw))))
		}
		haveField = true
		v := string(bytes.Trim(val, " \t"))
		switch {
		case bytes.EqualFold(name, []byte("Package")):
			cur.Name = v
		case bytes.EqualFold(name, []byte("Version")):
			cur.Version, cur.Line = v, line
		case bytes.EqualFold(name, []byte("Status")):
			status = v
		}
	}
	if inStanza {
		flush()
	}
	return out, nil
}

// installedStatus reports whether a dpkg Status value ("want flag status")
// says the package is installed and meant to stay so.
func installedStatus(s string) bool {
	f := strings.Fields(s)
	return len(f) == 3 && (f[0] == "install" || f[0] == "hold") && f[1] == "ok" && f[2] == "installed"
}
