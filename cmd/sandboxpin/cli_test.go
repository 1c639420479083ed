package main

import (
	"context"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHelp checks every command's --help: on stdout, exit 0, with a
// usage line, and every flag's placeholder written on purpose (an
// upper-case word, never pflag's type name such as "string").
func TestHelp(t *testing.T) {
	t.Parallel()
	for _, c := range commands(context.Background()) {
		t.Run(c.Name(), func(t *testing.T) {
			t.Parallel()
			code, out, errOut := runCmd(t, c.Name(), "--help")
			assert.Equal(t, exitOK, code)
			assert.Empty(t, errOut)
			assert.Contains(t, out, "Usage:\n  sandboxpin "+c.Name())
			c.Flags().VisitAll(func(f *pflag.Flag) {
				name, _ := pflag.UnquoteUsage(f)
				if f.Value.Type() == "bool" {
					assert.Empty(t, name, "--%s", f.Name)
					return
				}
				assert.Equal(t, strings.ToUpper(name), name, "--%s's placeholder %q", f.Name, name)
				assert.NotContains(t, []string{"", "string", "stringArray", "duration"}, name, "--%s", f.Name)
				assert.Contains(t, out, "--"+f.Name+" "+name, "--%s in the help", f.Name)
			})
		})
	}
}

// TestCompletion checks that each shell's completion script names the
// commands.
func TestCompletion(t *testing.T) {
	t.Parallel()
	for _, shell := range []string{"bash", "zsh", "fish"} {
		code, out, errOut := runCmd(t, "completion", shell)
		require.Equal(t, exitOK, code, errOut)
		assert.Contains(t, out, "sandboxpin", shell)
		assert.Greater(t, len(out), 1000, shell)
	}
	code, out, _ := runCmd(t, "__complete", "")
	require.Equal(t, exitOK, code)
	for _, c := range []string{"resolve", "check", "audit", "prepull"} {
		assert.Contains(t, out, c+"\t", "completes %s", c)
	}
	code, out, _ = runCmd(t, "__complete", "audit", "-o", "")
	require.Equal(t, exitOK, code)
	assert.Contains(t, out, "summary", "completes audit's formats")
}
