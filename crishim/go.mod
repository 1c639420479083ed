module github.com/sandboxpin/sandboxpin/crishim

// go 1.26.0, not the go 1.25.0 of criinfo/cri: the shim corrects
// ImageService StreamImages, which k8s.io/cri-api has from v0.36.0 on
// (pkg/apis/runtime/v1/api_grpc.pb.go ImageService_StreamImages_FullMethodName
// @v0.36.0, absent @v0.35.10), and cri-api v0.36.0 is a go 1.26.0 module (its
// go.mod). Its importers' go line goes to 1.26.0 with it; scripts/adoption
// shows it (issue 52).
go 1.26.0

require (
	github.com/prometheus/client_golang v1.25.0
	github.com/sandboxpin/sandboxpin v0.0.0-00010101000000-000000000000
	github.com/sandboxpin/sandboxpin/criinfo/cri v0.0.0-00010101000000-000000000000
	github.com/sandboxpin/sandboxpin/internal v0.0.0-00010101000000-000000000000
	github.com/sandboxpin/sandboxpin/pin v0.0.0-00010101000000-000000000000
	github.com/stretchr/testify v1.12.1
	google.golang.org/grpc v1.79.3
	google.golang.org/protobuf v1.36.12
	k8s.io/cri-api v0.36.6
)

require (
	github.com/BurntSushi/toml v1.6.0 // indirect
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/cyphar/filepath-securejoin v0.2.5 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/opencontainers/go-digest v1.0.0 // indirect
	github.com/pandatix/go-abnf v0.5.5 // indirect
	github.com/pelletier/go-toml/v2 v2.0.6 // indirect
	github.com/prometheus/client_model v0.6.3 // indirect
	github.com/prometheus/common v0.74.0 // indirect
	github.com/prometheus/procfs v0.22.0 // indirect
	github.com/sandboxpin/sandboxpin/reference v0.0.0-00010101000000-000000000000 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/net v0.62.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.43.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260128011058-8636f8732409 // indirect
	gopkg.in/yaml.v2 v2.4.0 // indirect
	sigs.k8s.io/yaml v1.3.0 // indirect
)
