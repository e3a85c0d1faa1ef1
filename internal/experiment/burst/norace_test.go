//go:build !race

package burst

const raceEnabled = false
