//go:build !race

package crishim

const raceEnabled = false
