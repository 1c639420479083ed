// Package deps pins the module's dependencies while packages are being written.
// It is removed once every dependency is imported by real code.
package deps

import (
	_ "github.com/pelletier/go-toml/v2"
	_ "google.golang.org/grpc"
	_ "k8s.io/cri-api/pkg/apis/runtime/v1"
	_ "sigs.k8s.io/yaml"
)
