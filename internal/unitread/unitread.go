// Package unitread reads the systemd units that deploy/ ships, for the
// tests of the deploy and internal modules: sections, "Key=value" lines,
// comments and backslash continuations, and a command line split at
// blanks. It takes no quoting and no escapes, and refuses a value that has
// them, so that a unit it cannot read right fails the test instead of
// being misread; systemd-analyze verify (deploy's TestShimUnitVerify)
// checks the same units as systemd reads them. The node's units are read
// by resolve, as systemd does.
package unitread

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// Unit is a unit file's values, by "Section.Key", in file order.
type Unit map[string][]string

// Read reads the unit file at path.
func Read(path string) (Unit, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	u, section := Unit{}, ""
	lines := strings.Split(strings.ReplaceAll(string(b), "\\\n", " "), "\n")
	for i, l := range lines {
		l = strings.TrimSpace(l)
		switch {
		case l == "" || l[0] == '#' || l[0] == ';':
		case l[0] == '[' && l[len(l)-1] == ']':
			section = l[1 : len(l)-1]
		default:
			k, v, ok := strings.Cut(l, "=")
			if !ok || section == "" {
				return nil, fmt.Errorf("%s:%d: not Key=value in a section: %q", path, i+1, l)
			}
			u[section+"."+strings.TrimSpace(k)] = append(u[section+"."+strings.TrimSpace(k)], strings.TrimSpace(v))
		}
	}
	return u, nil
}

// Get returns the last value of key in section, "" when none.
func (u Unit) Get(section, key string) string {
	vs := u[section+"."+key]
	if len(vs) == 0 {
		return ""
	}
	return vs[len(vs)-1]
}

// All returns every value of key in section.
func (u Unit) All(section, key string) []string { return u[section+"."+key] }

// Words splits a command line at blanks; quotes and escapes are refused.
func Words(s string) ([]string, error) {
	if strings.ContainsAny(s, `"'\`) {
		return nil, errors.New("unitread: quoting and escapes are not read: " + s)
	}
	return strings.Fields(s), nil
}
