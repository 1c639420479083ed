package nodeversion

import (
	"errors"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/resolve/internal/nodefs"
	"github.com/sandboxpin/sandboxpin/resolve/internal/releases"
)

// dpkgStatusTests are dpkg status files and what parseDpkgStatus reads from
// them; the fuzz target is seeded from them.
var dpkgStatusTests = []struct {
	name     string
	in       string        // the status file
	want     []dpkgPackage // installed packages that wantPackage selects
	wantLine int           // line of the *nodefs.ConfigError, 0 for none
}{
	{
		name: "installed and held",
		in: "Package: kubelet\nStatus: hold ok installed\nVersion: 1.31.2-1.1\n\n" +
			"Package: containerd.io\nStatus: install ok installed\nArchitecture: amd64\nVersion: 1.7.27-1\n",
		want: []dpkgPackage{{Name: "kubelet", Version: "1.31.2-1.1", Line: 3}, {Name: "containerd.io", Version: "1.7.27-1", Line: 8}},
	},
	{
		name: "removed, half-installed and unwanted packages are skipped",
		in: "Package: containerd\nStatus: deinstall ok config-files\nVersion: 1.6.20~ds1-1+deb12u3\n\n" +
			"Package: kubeadm\nStatus: install reinstreq half-installed\nVersion: 1.31.2-1.1\n\n" +
			"Package: runc\nStatus: install ok installed\nVersion: 1.1.5+ds1-1+deb12u1\n",
	},
	{
		name: "continuations, CRLF, field case, blank lines of spaces, no final newline",
		in: "package: cri-o\r\nSTATUS: install ok installed\r\nDescription: x\r\n more\r\n .\r\n\t tab\r\nVersion:  1.31.3-1.1 \r\n \t\r\n" +
			"Package: kubeadm\nStatus: install ok installed\nVersion: 1.37.2-1.1",
		want: []dpkgPackage{{Name: "cri-o", Version: "1.31.3-1.1", Line: 7}, {Name: "kubeadm", Version: "1.37.2-1.1", Line: 11}},
	},
	{name: "a stanza without a version", in: "Package: kubelet\nStatus: install ok installed\n"},
	{name: "empty", in: ""},
	{name: "continuation first", in: "Package: a\n\n continued\n", wantLine: 3},
	{name: "not a field", in: "Package: kubelet\nthis is not a field\n", wantLine: 2},
	{name: "empty field name", in: ": value\n", wantLine: 1},
	{name: "field name with a space", in: "Pack age: kubelet\n", wantLine: 1},
}

func TestParseDpkgStatus(t *testing.T) {
	t.Parallel()
	for _, tt := range dpkgStatusTests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseDpkgStatus([]byte(tt.in), wantPackage)
			if tt.wantLine != 0 {
				var ce *nodefs.ConfigError
				require.ErrorAs(t, err, &ce)
				assert.ErrorIs(t, err, nodefs.ErrInvalidConfig)
				assert.Equal(t, "/var/lib/dpkg/status", ce.Path)
				assert.Equal(t, tt.wantLine, ce.Line, "parseDpkgStatus(%q) error = %v", tt.in, err)
				assert.Nil(t, got)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got, "parseDpkgStatus(%q)", tt.in)
		})
	}
}

// TestParseDpkgStatusDebian reads the stanzas of containerd and runc as
// Debian 12 installed them (/var/lib/dpkg/status of the machine the tests
// were written on).
func TestParseDpkgStatusDebian(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("testdata/dpkg/debian-12-containerd-runc.status")
	require.NoError(t, err)
	got, err := parseDpkgStatus(b, wantPackage)
	require.NoError(t, err)
	assert.Equal(t, []dpkgPackage{{Name: "containerd", Version: "1.6.20~ds1-1+deb12u3", Line: 8}}, got)
	all, err := parseDpkgStatus(b, func(string) bool { return true })
	require.NoError(t, err)
	assert.Equal(t, []dpkgPackage{
		{Name: "containerd", Version: "1.6.20~ds1-1+deb12u3", Line: 8},
		{Name: "runc", Version: "1.1.5+ds1-1+deb12u1", Line: 35},
	}, all)
}

// TestDpkgVersions checks that the Debian versions of the packages read
// here parse as their upstream release (releases.ParseVersion, the one
// reading of versions).
func TestDpkgVersions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string // a Debian version
		want string // its upstream version
	}{
		{in: "1.6.20~ds1-1+deb12u3", want: "1.6.20"}, // Debian 12's containerd
		{in: "1.7.27-1", want: "1.7.27"},             // Docker's containerd.io
		{in: "1.31.2-1.1", want: "1.31.2"},           // pkgs.k8s.io
		{in: "1:1.6.12-0ubuntu1", want: "1.6.12"},    // an epoch
		{in: "2.0.0~rc.1-1", want: "2.0.0-rc.1"},     // a pre-release
		{in: "1.2.3+dfsg", want: "1.2.3"},
		{in: "20.10.24+dfsg1-1+b3", want: "20.10.24"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			v, err := releases.ParseVersion(tt.in)
			require.NoError(t, err)
			assert.Equal(t, tt.want, v.String())
		})
	}
	_, err := releases.ParseVersion("abc:1.2") // not an epoch
	require.ErrorIs(t, err, releases.ErrUnknownVersion)
}

func TestDpkgStatusErrorNamesLine(t *testing.T) {
	t.Parallel()
	_, err := parseDpkgStatus([]byte("Package: x\n\n bad\n"), wantPackage)
	var ce *nodefs.ConfigError
	require.True(t, errors.As(err, &ce))
	assert.Contains(t, err.Error(), "/var/lib/dpkg/status:3: ")
}
