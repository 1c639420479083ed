// Package crilive holds the live tests of criinfo/cri: its client against
// real containerd, CRI-O and cri-dockerd, started by this module's harnesses
// (containerdtest, criotest, cridockerdtest). They live here, not in
// criinfo/cri, so that the criinfo/cri module requires no module of the test
// harness (issue 52): an importer's module graph gets neither this module nor
// its go line. Run them as root with the runtimes that scripts/deps.sh builds;
// without them they skip. `go test ./crilive -update` rewrites
// criinfo/testdata's captures.
package crilive
