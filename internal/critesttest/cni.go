package critesttest

import (
	"fmt"
	"os"
	"path/filepath"
)

// bridgePlugins are the CNI plugins the network of [WriteCNI] runs; the
// runtimes add loopback themselves.
var bridgePlugins = []string{"bridge", "host-local", "portmap", "loopback"}

// WriteCNI writes a CNI bridge network (cni0, 10.88.0.0/16, with port
// mappings) into confDir and links the plugins it runs from pluginDir
// (Debian's /usr/lib/cni) into binDir: the directories of a runtime's CNI
// config. host-local keeps its leases in stateDir, not under /var/lib/cni.
// The bridge is made in the network namespace of the runtime, so a test
// runs the runtime in one of its own ([Isolate]).
func WriteCNI(confDir, binDir, pluginDir, stateDir string) error {
	return WriteBridge(confDir, binDir, pluginDir, stateDir, "cni0", "10.88.0.0/16")
}

// WriteBridge is WriteCNI with the bridge's name and subnet: runtimes that
// share a network namespace (internal/clustertest's nodes) each need their
// own.
func WriteBridge(confDir, binDir, pluginDir, stateDir, bridge, subnet string) error {
	for _, p := range bridgePlugins {
		if err := os.Symlink(filepath.Join(pluginDir, p), filepath.Join(binDir, p)); err != nil {
			return fmt.Errorf("critesttest: CNI plugin: %w", err)
		}
	}
	conf := fmt.Sprintf(`{
  "cniVersion": "0.4.0",
  "name": "critest",
  "plugins": [
    {
      "type": "bridge",
      "bridge": %q,
      "isGateway": true,
      "ipMasq": false,
      "ipam": {
        "type": "host-local",
        "dataDir": %q,
        "ranges": [[{"subnet": %q}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
`, bridge, stateDir, subnet)
	if err := os.WriteFile(filepath.Join(confDir, "10-critest.conflist"), []byte(conf), 0o600); err != nil {
		return fmt.Errorf("critesttest: CNI config: %w", err)
	}
	return nil
}
