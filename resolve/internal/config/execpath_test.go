package config

import (
	"testing"
)

func TestExecPath(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"/usr/bin/cri-dockerd --container-runtime-endpoint fd://": "usr/bin/cri-dockerd",
		"-/opt/bin/cri-dockerd":                                   "opt/bin/cri-dockerd",
		`"/usr/local/bin/cri dockerd" --x`:                        "usr/local/bin/cri dockerd",
		"cri-dockerd --x":                                         "",
		"${BIN}/cri-dockerd":                                      "",
		"/../../usr/bin/cri-dockerd":                              "usr/bin/cri-dockerd",
		"/":                                                       "",
		`"unterminated`:                                           "",
	} {
		if got := ExecPath(in); got != want {
			t.Errorf("ExecPath(%q) = %q, want %q", in, got, want)
		}
	}
}
