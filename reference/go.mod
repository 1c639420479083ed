module github.com/sandboxpin/sandboxpin/reference

// What CRI runtimes, the kubelet and kubeadm import (through pin): a module of
// its own, whose requirements are go-digest and, for tests only, testify, so
// that an importer's module graph gains no TOML, YAML or file-system module
// (issue 45; docs/design.md, "Modules"). Every line is a floor that importers
// inherit, so each is the oldest that works.
//
// go 1.24: the tests loop with testing.B.Loop; the lowest consumer checked
// (containerd 1.7 and 2.2) says go 1.25.0.
go 1.24

require (
	github.com/opencontainers/go-digest v1.0.0
	github.com/stretchr/testify v1.8.4 // tests only; containerd 1.7.35 holds v1.8.4
)

require (
	github.com/davecgh/go-spew v1.1.1 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
