package config

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/resolve/internal/nodefs"
	"github.com/sandboxpin/sandboxpin/resolve/internal/nodetest"
)

// commandTests are units and the command lines systemd runs for them.
var commandTests = []struct {
	name      string
	files     map[string]string // the node's files
	wantArgs  []string          // every argument as "value@file:line"
	wantNotes int               // notes expected
	wantNil   bool              // no unit file
}{
	{name: "no unit", files: map[string]string{"etc/x": ""}, wantNil: true},
	{
		name:     "etc over run over lib",
		files:    map[string]string{"lib/systemd/system/u.service": "[Service]\nExecStart=/lib\n", "run/systemd/system/u.service": "[Service]\nExecStart=/run\n", "etc/systemd/system/u.service": "[Service]\nExecStart=/etc\n"},
		wantArgs: []string{"/etc@/etc/systemd/system/u.service:2"},
	},
	{
		name: "drop-ins in name order, a reset, a name masked",
		files: map[string]string{
			"usr/lib/systemd/system/u.service":           "[Service]\nExecStart=/a --x=1\n",
			"usr/lib/systemd/system/u.service.d/20.conf": "[Service]\nExecStart=\nExecStart=/masked\n",
			"etc/systemd/system/u.service.d/20.conf":     "[Service]\nExecStart=\nExecStart=/b \\\n  --x=2\n",
			"run/systemd/system/u.service.d/10.conf":     "[Service]\nExecStart=\nExecStart=/c\n",
		},
		wantArgs: []string{"/b@/etc/systemd/system/u.service.d/20.conf:3", "--x=2@/etc/systemd/system/u.service.d/20.conf:4"},
	},
	{
		name: "environment: files override Environment=, in order",
		files: map[string]string{
			"lib/systemd/system/u.service": "[Service]\nEnvironment=A=env B=env \"C=c d\"\nEnvironmentFile=-/etc/sysconfig/u\nEnvironmentFile=/etc/default/u\n" +
				"ExecStart=/a $A ${B} $C x${C}y $$B $UNSET ${UNSET}\n",
			"etc/sysconfig/u": "A=one\nB='from sysconfig'\n",
			"etc/default/u":   "# a comment\nA=\"--f=1 --g 2\"\n",
		},
		wantArgs: []string{"/a@/lib/systemd/system/u.service:5", "--f=1@/etc/default/u:2", "--g@/etc/default/u:2", "2@/etc/default/u:2",
			"from sysconfig@/etc/sysconfig/u:2", "c@/lib/systemd/system/u.service:2", "d@/lib/systemd/system/u.service:2",
			"xc dy@/lib/systemd/system/u.service:2", "$B@/lib/systemd/system/u.service:5", "@/lib/systemd/system/u.service:5"},
		wantNotes: 1, // ${UNSET}
	},
	{
		name:      "missing environment file without -",
		files:     map[string]string{"lib/systemd/system/u.service": "[Service]\nEnvironmentFile=/etc/sysconfig/u\nExecStart=/a\n"},
		wantArgs:  []string{"/a@/lib/systemd/system/u.service:3"},
		wantNotes: 1,
	},
	{
		name: "an empty EnvironmentFile= clears the list",
		files: map[string]string{"lib/systemd/system/u.service": "[Service]\nEnvironmentFile=/etc/a\nExecStart=/a $X\n",
			"etc/systemd/system/u.service.d/x.conf": "[Service]\nEnvironmentFile=\nEnvironmentFile=/etc/b\n", "etc/a": "X=a\n", "etc/b": "X=b\n"},
		wantArgs: []string{"/a@/lib/systemd/system/u.service:3", "b@/etc/b:1"},
	},
	{
		name:      "wildcard environment file not read",
		files:     map[string]string{"lib/systemd/system/u.service": "[Service]\nEnvironmentFile=-/etc/u/*.env\nExecStart=/a\n"},
		wantArgs:  []string{"/a@/lib/systemd/system/u.service:3"},
		wantNotes: 1,
	},
	{
		name:     "no ExecStart",
		files:    map[string]string{"lib/systemd/system/u.service": "[Unit]\nDescription=x\n"},
		wantArgs: nil,
	},
}

func TestReadCommand(t *testing.T) {
	t.Parallel()
	for _, tt := range commandTests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ReadCommand(nodetest.MapFS(tt.files), "u.service")
			require.NoError(t, err)
			if tt.wantNil {
				assert.Nil(t, got)
				return
			}
			require.NotNil(t, got)
			var args []string
			for _, a := range got.Args {
				args = append(args, a.Value+"@"+a.Origin())
			}
			assert.Equal(t, tt.wantArgs, args)
			assert.Len(t, got.Notes, tt.wantNotes, "notes: %q", got.Notes)
		})
	}
}

func TestCommandFlags(t *testing.T) {
	t.Parallel()
	fsys := nodetest.MapFS(map[string]string{
		"lib/systemd/system/u.service": "[Service]\nEnvironmentFile=/etc/sysconfig/u\nExecStart=/a -c /x.toml --config=/y.toml \\\n  --p $IMG $OPTS -- --config /z\n",
		"etc/sysconfig/u":              "IMG=a/p:1\nOPTS=\"--p=b/p:2\"\n",
	})
	c, err := ReadCommand(fsys, "u.service")
	require.NoError(t, err)
	cfg := c.Flags("--config", "-c")
	require.Len(t, cfg, 2)
	assert.Equal(t, Found{Value: "/x.toml", Path: "/lib/systemd/system/u.service", Line: 3, Key: "ExecStart", Flag: "-c"}, cfg[0])
	assert.Equal(t, "/y.toml", c.Flag("-c", "--config").Value, "the last one wins, \"--\" ends the flags")
	p := c.Flags("--p")
	require.Len(t, p, 2)
	assert.Equal(t, Found{Value: "a/p:1", Path: "/etc/sysconfig/u", Line: 1, Key: "IMG"}, p[0], "a value from elsewhere has no Flag")
	assert.Equal(t, Found{Value: "b/p:2", Path: "/etc/sysconfig/u", Line: 2, Key: "OPTS", Flag: "--p"}, p[1])
	assert.Nil(t, c.Flag("--absent"))
	assert.Equal(t, "a/p:1", c.Lookup("IMG").Value)
	assert.Nil(t, c.Lookup("NONE"))
	var nilCmd *Command
	assert.Nil(t, nilCmd.Flag("--p"))
}

func TestReadCommandErrors(t *testing.T) {
	t.Parallel()
	many := strings.Repeat("x ", maxCommandWords+1)
	tests := []struct {
		name     string
		files    map[string]string
		wantPath string
		wantLine int
		wantErr  error
	}{
		{
			name:     "unterminated quote in a variable",
			files:    map[string]string{"lib/systemd/system/u.service": "[Service]\nEnvironmentFile=/etc/u\nExecStart=/a $X\n", "etc/u": "\nX=--p \\\"a\n"},
			wantPath: "/etc/u", wantLine: 2, wantErr: nodefs.ErrInvalidConfig,
		},
		{
			name:     "too many words from a variable",
			files:    map[string]string{"lib/systemd/system/u.service": "[Service]\nEnvironment=\"X=" + many + "\"\nExecStart=/a $X\n"},
			wantPath: "/lib/systemd/system/u.service", wantLine: 2, wantErr: nodefs.ErrLimit,
		},
		{
			name: "too many environment files",
			files: map[string]string{"lib/systemd/system/u.service": "[Service]\n" + strings.Repeat("EnvironmentFile=-/etc/u\n", maxEnvFiles+1) +
				"ExecStart=/a\n"},
			wantPath: "/lib/systemd/system/u.service", wantLine: maxEnvFiles + 2, wantErr: nodefs.ErrLimit,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ReadCommand(nodetest.MapFS(tt.files), "u.service")
			require.ErrorIs(t, err, tt.wantErr)
			var ce *nodefs.ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, tt.wantPath, ce.Path, "%v", err)
			assert.Equal(t, tt.wantLine, ce.Line, "%v", err)
		})
	}
}

// FuzzReadCommand checks that ReadCommand never panics on a unit and an
// environment file, that an error comes with a nil Command, and that each
// argument names a file that was read.
func FuzzReadCommand(f *testing.F) {
	for _, tt := range commandTests {
		f.Add(tt.files["lib/systemd/system/u.service"], tt.files["etc/sysconfig/u"])
	}
	f.Fuzz(func(t *testing.T, unit, env string) {
		c, err := ReadCommand(nodetest.MapFS(map[string]string{"lib/systemd/system/u.service": unit, "etc/sysconfig/u": env}), "u.service")
		if err != nil {
			if c != nil {
				t.Fatalf("ReadCommand = %+v with error %v", c, err)
			}
			return
		}
		for _, a := range c.Args {
			if a.Path != "/lib/systemd/system/u.service" && a.Path != "/etc/sysconfig/u" {
				t.Fatalf("argument %s", fmt.Sprint(a))
			}
		}
	})
}
