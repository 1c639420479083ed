module github.com/sandboxpin/sandboxpin/pin

// The matcher CRI runtimes call from ListImages and ImageStatus: a module of
// its own beside reference, whose requirements are reference, go-digest
// (through reference) and, for tests only, testify (issue 45; docs/design.md,
// "Modules"). Every line is a floor that importers inherit.
//
// go 1.24: the tests loop with testing.B.Loop.
go 1.24

require (
	github.com/sandboxpin/sandboxpin/reference v0.0.0-00010101000000-000000000000
	github.com/stretchr/testify v1.8.4 // tests only; containerd 1.7.35 holds v1.8.4
)

require (
	github.com/davecgh/go-spew v1.1.1 // indirect
	github.com/opencontainers/go-digest v1.0.0 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
