package unitread

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRead(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.service")
	require.NoError(t, os.WriteFile(p, []byte("# c\n[Unit]\nAfter=a.service\nAfter=b.service\n\n[Service]\nExecStart=/bin/x \\\n  --flag v\n; c\nRestart=always\n"), 0o600))
	u, err := Read(p)
	require.NoError(t, err)
	assert.Equal(t, []string{"a.service", "b.service"}, u.All("Unit", "After"))
	assert.Equal(t, "always", u.Get("Service", "Restart"))
	words, err := Words(u.Get("Service", "ExecStart"))
	require.NoError(t, err)
	assert.Equal(t, []string{"/bin/x", "--flag", "v"}, words)
	_, err = Words(`/bin/x "a b"`)
	require.Error(t, err, "quoting is refused, not misread")

	require.NoError(t, os.WriteFile(p, []byte("Key=outside a section\n"), 0o600))
	_, err = Read(p)
	require.ErrorContains(t, err, p+":1")
}
