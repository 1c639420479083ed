//go:build race

package crishim

// raceEnabled is true in a test binary built with -race, where timings say
// nothing about the shim.
const raceEnabled = true
