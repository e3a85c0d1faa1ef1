//go:build race

package burst

// raceEnabled: under -race, a test that repeats a virtual-time burst over
// many seeds (internal/virtual: no goroutines, sockets or clock, so
// nothing for the race detector, at 5–10 times the CPU) runs a few of
// them. Without -race every test runs in full.
const raceEnabled = true
