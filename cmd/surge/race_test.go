//go:build race

package main

// raceEnabled: under -race, tests that only run in virtual time
// (--simulate: internal/virtual runs without goroutines, sockets or a
// clock) and take seconds of CPU there are skipped or shortened
// (skipVirtualUnderRace), and a few long real-time ones run in a shorter
// form; the concurrent paths they share are raced by the tests that still
// run in full. Without -race every test runs in full.
const raceEnabled = true
