module github.com/sandboxpin/sandboxpin/internal

go 1.26.0

require (
	github.com/distribution/reference v0.6.0
	github.com/google/go-containerregistry v0.5.1
	github.com/sandboxpin/sandboxpin v0.0.0-00010101000000-000000000000
	github.com/sandboxpin/sandboxpin/criinfo/cri v0.0.0-00010101000000-000000000000
	github.com/sandboxpin/sandboxpin/pin v0.0.0-00010101000000-000000000000
	github.com/sandboxpin/sandboxpin/reference v0.0.0-00010101000000-000000000000
	github.com/stretchr/testify v1.11.1
	golang.org/x/mod v0.21.0
	golang.org/x/sys v0.31.0
	google.golang.org/grpc v1.72.1
	google.golang.org/protobuf v1.36.12
	k8s.io/cri-api v0.34.10
)

require (
	github.com/containerd/stargz-snapshotter/estargz v0.4.1 // indirect
	github.com/docker/cli v0.0.0-20191017083524-a8ff7f821017 // indirect
	github.com/docker/distribution v2.7.1+incompatible // indirect
	github.com/docker/docker v1.4.2-0.20190924003213-a8608b5b67c7 // indirect
	github.com/docker/docker-credential-helpers v0.6.3 // indirect
	github.com/opencontainers/go-digest v1.0.0 // indirect
	github.com/opencontainers/image-spec v1.0.1 // indirect
	github.com/pelletier/go-toml/v2 v2.0.6 // indirect
	github.com/pkg/errors v0.9.1 // indirect
	golang.org/x/sync v0.12.0 // indirect
	gopkg.in/yaml.v2 v2.4.0 // indirect
	sigs.k8s.io/yaml v1.3.0
)

require (
	github.com/BurntSushi/toml v1.6.0 // indirect
	github.com/coreos/go-systemd/v22 v22.7.0
	github.com/cyphar/filepath-securejoin v0.2.5 // indirect
	github.com/davecgh/go-spew v1.1.1 // indirect
	github.com/godbus/dbus/v5 v5.2.2
	github.com/pmezard/go-difflib v1.0.0 // indirect
	github.com/rogpeppe/go-internal v1.16.0 // indirect
	go.yaml.in/yaml/v3 v3.0.2 // indirect
	golang.org/x/net v0.38.0 // indirect
	golang.org/x/text v0.23.0 // indirect
	golang.org/x/tools v0.26.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20250303144028-a0af3efb3deb // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
