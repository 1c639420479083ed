package resolve

import "strconv"

// Location says where on the node a value is stated, in the terms of the
// file that states it: every [Candidate], [Note], [Conflict] and [Fix] that
// concerns a file carries one. The zero Location is "not in a file" (a live
// report, a built-in default, or a finding about no file in particular).
type Location struct {
	// Path is the node path of the file, "/etc/containerd/config.toml".
	Path string `json:"path,omitempty"`
	// Line is 1-based, 0 when unknown.
	Line int `json:"line,omitempty"`
	// Key is the TOML or YAML key ("plugins.\"io.containerd.grpc.v1.cri\".sandbox_image",
	// "nodeRegistration.kubeletExtraArgs"), or the environment variable or
	// unit setting that holds a command line ("KUBELET_KUBEADM_ARGS",
	// "ExecStart"); "" for the whole file.
	Key string `json:"key,omitempty"`
	// Flag is the command-line flag within Key that states the value
	// ("--pod-infra-container-image"), "" when Key states it alone.
	Flag string `json:"flag,omitempty"`
}

// Origin returns "Path:Line", Path when the line is unknown, and "" for the
// zero Location: the Origin form of a file position. (It is no String
// method: the types that embed a Location are not printed as their
// position.)
func (l Location) Origin() string {
	if l.Line > 0 {
		return l.Path + ":" + strconv.Itoa(l.Line)
	}
	return l.Path
}
