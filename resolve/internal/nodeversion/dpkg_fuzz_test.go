package nodeversion

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/sandboxpin/sandboxpin/resolve/internal/nodefs"
	"github.com/sandboxpin/sandboxpin/resolve/internal/releases"
)

// FuzzDpkgStatus checks parseDpkgStatus on arbitrary files: an error is a
// *nodefs.ConfigError naming a line of the file and comes with no packages; each
// package read is a selected one with a version, whose line is its Version
// field's; and releases.ParseVersion of that version does not panic.
func FuzzDpkgStatus(f *testing.F) {
	for _, tt := range dpkgStatusTests {
		f.Add(tt.in)
	}
	if b, err := os.ReadFile("testdata/dpkg/debian-12-containerd-runc.status"); err == nil {
		f.Add(string(b))
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := parseDpkgStatus([]byte(in), wantPackage)
		lines := strings.Split(in, "\n")
		if err != nil {
			var ce *nodefs.ConfigError
			if !errors.As(err, &ce) || !errors.Is(err, nodefs.ErrInvalidConfig) || got != nil {
				t.Fatalf("parseDpkgStatus(%q) = %v, %v; want nil and a *nodefs.ConfigError", in, got, err)
			}
			if ce.Line < 1 || ce.Line > len(lines) {
				t.Fatalf("parseDpkgStatus(%q): error at line %d of %d", in, ce.Line, len(lines))
			}
			return
		}
		for _, p := range got {
			if !wantPackage(p.Name) || p.Version == "" || p.Line < 1 || p.Line > len(lines) {
				t.Fatalf("parseDpkgStatus(%q) read %+v", in, p)
			}
			if name, _, _ := strings.Cut(lines[p.Line-1], ":"); !strings.EqualFold(name, "Version") {
				t.Fatalf("parseDpkgStatus(%q): %+v: line %d is %q", in, p, p.Line, lines[p.Line-1])
			}
			if !bytes.Contains([]byte(lines[p.Line-1]), []byte(p.Version)) {
				t.Fatalf("parseDpkgStatus(%q): version %q is not on line %d", in, p.Version, p.Line)
			}
			_, _ = releases.ParseVersion(p.Version)
		}
	})
}
