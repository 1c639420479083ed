// Package runtimetest holds what the runtime harnesses of this module
// (containerdtest, criotest) share: waiting for a freshly started CRI runtime
// to answer on its socket.
package runtimetest
