// Package runtimetest holds what the runtime harnesses of this module
// (containerdtest, criotest, cridockerdtest, kubelettest and the others)
// share:
//
//   - wait.go: waiting for a freshly started CRI runtime to answer on its
//     socket;
//   - terminate.go: one SIGTERM-then-SIGKILL stop for runtimes, the shim
//     and critest's processes;
//   - cache.go: the directory scripts/deps.sh builds the runtimes into;
//   - require.go: whether a live test skips or fails when its runtime is
//     missing (SANDBOXPIN_REQUIRE_RUNTIMES, -short);
//   - sandboxpin.go: building cmd/sandboxpin and running its audit;
//   - buffer.go: a buffer that a process's output and a test read at once.
package runtimetest
