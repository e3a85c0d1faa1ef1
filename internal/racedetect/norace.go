//go:build !race

// Package racedetect tells tests whether the race detector is on, for the
// few that must run differently under it: allocation counts (the detector
// makes sync.Pool drop items at random), and tests that only run in
// virtual time (internal/virtual: no goroutines, sockets or clock, so
// nothing to race, at 4–10 times the CPU), which are skipped or shortened
// under -race while the concurrent paths keep tests of their own.
package racedetect

// Enabled is true in a binary built with -race.
const Enabled = false
