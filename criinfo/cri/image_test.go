package cri

import (
	"github.com/sandboxpin/sandboxpin/pin"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The generated CRI image satisfies pin.Image without pin importing cri-api
// (this check lives here so that the pin module needs no cri-api, not even
// for its tests).
var _ pin.Image = (*runtimeapi.Image)(nil)
