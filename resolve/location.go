package resolve

import (
	"encoding/json"
	"strconv"
)

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

// MarshalJSON writes the note with "origin", its Location's Origin(),
// derived for readers of older versions (it was a field of its own, which
// could disagree with the position); Unmarshal ignores that key.
func (n Note) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Kind      Kind      `json:"kind"`
		Component Component `json:"component,omitempty"`
		Version   string    `json:"version,omitempty"`
		Origin    string    `json:"origin,omitempty"`
		Location
		Message string `json:"message"`
	}{n.Kind, n.Component, n.Version, n.Origin(), n.Location, n.Message})
}

// MarshalJSON writes the conflict with "origin" derived, as [Note.MarshalJSON].
func (c Conflict) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		A         Candidate `json:"a"`
		B         Candidate `json:"b,omitzero"`
		Kind      Kind      `json:"kind"`
		Component Component `json:"component,omitempty"`
		Version   string    `json:"version,omitempty"`
		Origin    string    `json:"origin,omitempty"`
		Location
		Message string `json:"message"`
	}{c.A, c.B, c.Kind, c.Component, c.Version, c.Origin(), c.Location, c.Message})
}
