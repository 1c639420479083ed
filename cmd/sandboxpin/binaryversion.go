package main

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"time"
)

// versionTimeout bounds `cri-dockerd --version`, which prints and exits.
const versionTimeout = 5 * time.Second

// maxVersionOutput caps what is read of its output.
const maxVersionOutput = 4 << 10

// versionWord is a release version in a --version line: "0.4.4" in
// "cri-dockerd 0.4.4 (98c4823)".
var versionWord = regexp.MustCompile(`^v?[0-9]+\.[0-9]+\.[0-9]+$`)

// binaryVersion is resolve.Options.BinaryVersion on the live node: it runs
// `path --version` for cri-dockerd, the one runtime whose version no file
// states when it is built as its Makefile builds it (-trimpath keeps the -X
// stamp out of the Go build info). cri-dockerd prints (cmd/server.go at v0.4.4)
// "cri-dockerd VERSION (COMMIT)" for --version (seen on v0.3.14 and v0.4.4,
// TestLiveCRIDockerdVersion in criinfo/cri). Other components are not run.
func binaryVersion(ctx context.Context, component, path string) (string, error) {
	if component != "cri-dockerd" {
		return "", fmt.Errorf("sandboxpin runs only cri-dockerd for its version, not %s", component)
	}
	ctx, cancel := context.WithTimeout(ctx, versionTimeout)
	defer cancel()
	var out limitedBuffer
	cmd := exec.CommandContext(ctx, path, "--version")
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s --version: %w", path, err)
	}
	return parseVersionOutput(out.Bytes())
}

// parseVersionOutput returns the first release version among the words of
// the first line.
func parseVersionOutput(b []byte) (string, error) {
	line, _, _ := bytes.Cut(b, []byte("\n"))
	for _, w := range bytes.Fields(line) {
		if versionWord.Match(w) {
			return string(w), nil
		}
	}
	return "", fmt.Errorf("no version in %q", line)
}

// limitedBuffer keeps the first maxVersionOutput bytes written to it. It
// embeds no bytes.Buffer: io.Copy would use the promoted ReadFrom and skip
// the cap.
type limitedBuffer struct{ b bytes.Buffer }

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := maxVersionOutput - l.b.Len(); room > 0 {
		l.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// Bytes returns what was kept.
func (l *limitedBuffer) Bytes() []byte { return l.b.Bytes() }
