module github.com/sandboxpin/sandboxpin

// The pure packages (reference, pin, criinfo, resolve). Every line here is a
// floor that importers (CRI runtimes, kubelet, installers) inherit through
// minimal version selection, so each is the oldest that works; see
// scripts/adoption.sh for the consumers it is checked against.
//
// go 1.25.0: package remedy writes through os.Root's Rename and Link (Go
// 1.25); the lowest consumer checked (containerd 1.7 and 2.2) says go 1.25.0.
go 1.25.0

require (
	github.com/BurntSushi/toml v1.6.0 // CRI-O's decoder, the version cri-o v1.36.3 builds with (its go.mod; pkg/config/config.go toml.Decode): TOML 1.1, which earlier versions' verdicts differ from; go 1.18, no requirements
	github.com/cyphar/filepath-securejoin v0.2.5 // resolve.DirFS; v0.2.4 fixed a Windows escape, v0.2.5 names the loop path; no requirements
	github.com/opencontainers/go-digest v1.0.0 // indirect
	github.com/pelletier/go-toml/v2 v2.0.6 // containerd 2.x's decoder; DecodeError.Position and Key; no requirements
	github.com/stretchr/testify v1.8.4 // tests only; containerd 1.7.35 holds v1.8.4
	go.yaml.in/yaml/v3 v3.0.2 // the node trees that bound a kubeadm config: gopkg.in/yaml.v3's maintained successor, its first release; go 1.22
	sigs.k8s.io/yaml v1.3.0 // kubeadm's decoder; containerd 1.7.35 holds v1.3.0
)

require (
	github.com/sandboxpin/sandboxpin/pin v0.0.0-00010101000000-000000000000
	github.com/sandboxpin/sandboxpin/reference v0.0.0-00010101000000-000000000000
)

require (
	github.com/davecgh/go-spew v1.1.1 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	gopkg.in/yaml.v2 v2.4.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
