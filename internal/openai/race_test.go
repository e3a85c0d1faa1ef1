//go:build race

package openai

// raceEnabled: the race detector makes sync.Pool drop items at random, so
// allocation counts are not stable.
const raceEnabled = true
