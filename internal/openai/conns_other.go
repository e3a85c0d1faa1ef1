//go:build !unix

package openai

// fdLimit is 0 (unknown) where there is no RLIMIT_NOFILE.
func fdLimit() int { return 0 }
