package config

import (
	"fmt"

	"github.com/sandboxpin/sandboxpin/resolve/internal/nodefs"
)

// The limits of the line-oriented files: cri-dockerd's systemd unit and its
// drop-ins, and the kubelet's environment files; see "Limits" in
// package resolve's documentation. Their parsers are linear already; these bound the
// lists they build, which within 4 MiB would otherwise reach millions of
// entries (a 4 MiB ExecStart of two million words took 280 MB to split).
const (
	// maxCommandWords bounds the words of one command line: an ExecStart
	// or a flags variable (KUBELET_KUBEADM_ARGS). cri-dockerd's and the
	// kubelet's have 5 to 40.
	maxCommandWords = 4096
	// maxExecStarts bounds the ExecStart= lines of a unit and its drop-ins
	// together, resets included. A unit has one, a drop-in a reset and one
	// more.
	maxExecStarts = 256
	// maxEnvVariables bounds the variables of one environment file;
	// kubeadm-flags.env has one, /etc/default/kubelet one or two.
	maxEnvVariables = 1024
)

// errTooManyWords is the error of a command line with more than
// maxCommandWords words.
var errTooManyWords = fmt.Errorf("%w: more than %d words in one command line", nodefs.ErrLimit, maxCommandWords)
