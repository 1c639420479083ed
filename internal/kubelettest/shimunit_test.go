package kubelettest_test

import (
	"fmt"
	"slices"

	"github.com/sandboxpin/sandboxpin/internal/unitread"
)

// shimUnitPath is the systemd unit that ships the shim.
const shimUnitPath = "../../deploy/systemd/sandboxpin-shim.service"

// shimCommand returns the ExecStart line of the shipped systemd unit, its
// binary replaced by bin and the values of --listen, --runtime-endpoint,
// --root and --metrics-listen by the test's: the flags the kubelet test
// runs with are the flags that ship. Each must be in the line.
func shimCommand(bin, listen, runtime, root, metrics string) ([]string, error) {
	u, err := unitread.Read(shimUnitPath)
	if err != nil {
		return nil, err
	}
	words, err := unitread.Words(u.Get("Service", "ExecStart"))
	if err != nil {
		return nil, fmt.Errorf("%s: ExecStart: %w", shimUnitPath, err)
	}
	if len(words) < 2 || words[1] != "shim" {
		return nil, fmt.Errorf("%s: ExecStart %q does not run `sandboxpin shim`", shimUnitPath, words)
	}
	words[0] = bin
	for flag, v := range map[string]string{"--listen": listen, "--runtime-endpoint": runtime, "--root": root, "--metrics-listen": metrics} {
		i := slices.Index(words, flag)
		if i < 0 || i+1 >= len(words) {
			return nil, fmt.Errorf("%s: ExecStart %q has no %s VALUE to replace", shimUnitPath, words, flag)
		}
		words[i+1] = v
	}
	return words, nil
}
