package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseVersionOutput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, out, want, wantErr string
	}{
		{name: "cri-dockerd", out: "cri-dockerd 0.4.4 (98c4823)\n", want: "0.4.4"},
		{name: "v prefix", out: "cri-dockerd v0.3.14 (HEAD)\n", want: "v0.3.14"},
		{name: "first line only", out: "cri-dockerd dev (HEAD)\n1.2.3\n", wantErr: `no version in "cri-dockerd dev (HEAD)"`},
		{name: "empty", out: "", wantErr: `no version in ""`},
		{name: "pre-release is not a release", out: "cri-dockerd 0.4.4-rc1 (x)", wantErr: "no version"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseVersionOutput([]byte(tt.out))
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestBinaryVersion runs small scripts in place of cri-dockerd: the output
// is capped, a failure and a hang are errors, other components are not run.
func TestBinaryVersion(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := func(name, body string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o700)) //nolint:gosec // G306: a test program
		return p
	}
	ok := script("ok", `echo "cri-dockerd 0.4.4 (98c4823)"`)
	v, err := binaryVersion(context.Background(), "cri-dockerd", ok)
	require.NoError(t, err)
	assert.Equal(t, "0.4.4", v)

	_, err = binaryVersion(context.Background(), "containerd", ok)
	require.ErrorContains(t, err, "runs only cri-dockerd")

	_, err = binaryVersion(context.Background(), "cri-dockerd", script("fails", "echo no >&2; exit 3"))
	require.ErrorContains(t, err, "exit status 3")

	long := script("long", `head -c 100000 /dev/zero | tr '\0' x; echo`)
	_, err = binaryVersion(context.Background(), "cri-dockerd", long)
	require.Error(t, err)
	assert.Less(t, len(err.Error()), maxVersionOutput+200, "the output is capped")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = binaryVersion(ctx, "cri-dockerd", script("hangs", "sleep 60"))
	require.Error(t, err)
	assert.False(t, strings.Contains(err.Error(), "0.4.4"))
}

// FuzzParseVersionOutput feeds parseVersionOutput what a binary may print:
// it returns a release version from the first line, or an error, and never
// panics.
func FuzzParseVersionOutput(f *testing.F) {
	for _, seed := range []string{"cri-dockerd 0.4.4 (98c4823)\n", "cri-dockerd dev (HEAD)\n", "", "\n1.2.3", "v1.2.3", "1.2.3.4 1.2.3"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := parseVersionOutput(b)
		if err != nil {
			return
		}
		require.Regexp(t, versionWord, v)
		line, _, _ := strings.Cut(string(b), "\n")
		require.Contains(t, line, v)
	})
}
