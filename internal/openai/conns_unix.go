//go:build unix

package openai

import (
	"net"
	"syscall"
)

// fdLimit is the process's open-file limit (RLIMIT_NOFILE, soft: Go raises
// it to the hard limit at start-up), or 0 when unknown.
func fdLimit() int {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil || r.Cur > 1<<30 {
		return 0
	}
	return int(r.Cur)
}

// peekAlive reports whether an idle connection is still open and quiet:
// a MSG_PEEK on its socket (non-blocking, as Go keeps every socket) that
// would block (EAGAIN) means
// alive; end of file (the server closed it, as llama.cpp's llama-server
// does after every streamed response though it advertises keep-alive), an
// unasked byte or an error means dead. A read deadline in the past cannot
// ask this: Go's poller reports the deadline before any system call.
// Connections without a socket (in-memory pipes in tests) are taken as
// alive; a request that still finds one dead is replayed (client.go).
func peekAlive(nc net.Conn) bool {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	alive := false
	var b [1]byte
	err = rc.Read(func(fd uintptr) bool {
		for {
			_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK)
			if err == syscall.EINTR {
				continue
			}
			alive = err == syscall.EAGAIN || err == syscall.EWOULDBLOCK
			return true // never wait for the socket to become readable
		}
	})
	return err == nil && alive
}
