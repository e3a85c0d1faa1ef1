//go:build !unix

package openai

import "net"

// fdLimit is 0 (unknown) where there is no RLIMIT_NOFILE.
func fdLimit() int { return 0 }

// peekAlive takes an idle connection as alive where there is no
// non-blocking peek; a request that finds it dead is replayed (client.go).
func peekAlive(net.Conn) bool { return true }
