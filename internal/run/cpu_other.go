//go:build !unix

package run

// cpuSeconds is unknown on this platform: −1.
func cpuSeconds() float64 { return -1 }
