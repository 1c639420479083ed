module github.com/sandboxpin/sandboxpin/criinfo/cri

// The live CRI client and MarkPinned. Every line is a floor that importers
// inherit, so each is the oldest that works, and no module of the test
// harness (internal) is required: the fake runtime the tests use is this
// module's package fakecri, and the live tests are internal/crilive's
// (issue 52). scripts/adoption checks a go 1.25 importer against it.
//
// go 1.25.0: the root module (criinfo) says go 1.25.0; k8s.io/cri-api
// v0.34.10 says go 1.24.0 (its go.mod), as Kubernetes 1.35's cri-api v0.35.x
// says go 1.25.0.
go 1.25.0

require (
	github.com/sandboxpin/sandboxpin v0.0.0-00010101000000-000000000000
	github.com/sandboxpin/sandboxpin/pin v0.0.0-00010101000000-000000000000
	github.com/stretchr/testify v1.11.1
	google.golang.org/grpc v1.72.1
	google.golang.org/protobuf v1.36.12
	k8s.io/cri-api v0.34.10
)

require (
	github.com/BurntSushi/toml v1.6.0 // indirect
	github.com/cyphar/filepath-securejoin v0.2.5 // indirect
	github.com/davecgh/go-spew v1.1.1 // indirect
	github.com/kr/text v0.2.0 // indirect
	github.com/opencontainers/go-digest v1.0.0 // indirect
	github.com/pelletier/go-toml/v2 v2.0.6 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	github.com/sandboxpin/sandboxpin/reference v0.0.0-00010101000000-000000000000 // indirect
	go.yaml.in/yaml/v3 v3.0.2 // indirect
	golang.org/x/net v0.38.0 // indirect
	golang.org/x/sys v0.31.0 // indirect
	golang.org/x/text v0.23.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20250303144028-a0af3efb3deb // indirect
	gopkg.in/yaml.v2 v2.4.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
	sigs.k8s.io/yaml v1.3.0 // indirect
)
