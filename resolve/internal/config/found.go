package config

import (
	"fmt"
	"strings"
)

// Found is one value read from a node file, with where it was written.
type Found struct {
	Value string // exactly as written
	Path  string // node path, "/etc/containerd/config.toml"
	Line  int    // 1-based; 0 if unknown
	Key   string // key or variable it was read from ("ExecStart", "KUBELET_KUBEADM_ARGS")
	Flag  string // the command-line flag within Key that gives it ("--pod-infra-container-image"), or ""
}

// Origin is the "file:line" form of a resolve.Candidate's Origin.
func (f Found) Origin() string {
	if f.Line > 0 {
		return fmt.Sprintf("%s:%d", f.Path, f.Line)
	}
	return f.Path
}

// Where is the "file:line (key)" form used in messages.
func (f Found) Where() string {
	if f.Key == "" {
		return f.Origin()
	}
	return f.Origin() + " (" + strings.TrimSpace(f.Key+" "+f.Flag) + ")"
}

// Problem is a configuration mistake with one side: resolve makes it a
// Conflict with a zero B.
type Problem struct {
	At  Found
	Msg string
}
