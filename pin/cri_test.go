package pin

import runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

// The generated CRI image satisfies Image without pin importing cri-api.
var _ Image = (*runtimeapi.Image)(nil)
