//go:build unix

package openai

import (
	"errors"
	"io"
	"iter"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// sockReader reads a plain TCP connection without the read that finds its
// socket empty.
//
// Go's net.Conn.Read makes a read system call first and waits for the
// socket to become readable only when that call says EAGAIN. A streamed
// response arrives one small event at a time, each read as soon as it
// lands, so nearly every event costs two reads: the one that returns it
// and, once it has been parsed, the one that finds nothing more yet. (It
// must be so for Read: each call starts by forgetting any readiness the
// poller saw, so only a read can tell whether bytes arrived meanwhile.)
//
// sockReader keeps one raw read session (syscall.RawConn.Read) open across
// calls to Read, in a coroutine (iter.Pull2), so that the poller's
// readiness is not forgotten between two reads: after a short read, which
// leaves the socket drained, it waits for readability before reading
// again; data that arrived meanwhile makes the wait return at once. A full
// read, or a wake-up that finds nothing (possible, as readiness may be for
// bytes already read), reads again. Until the session's first EAGAIN it
// always reads again: the session began by forgetting what the poller had
// seen. So a response costs one empty read, not one per event. Timestamps
// are unchanged: the caller still stamps each event when its bytes reach
// it.
//
// One case escapes readiness: a close (FIN) that lands with the last data,
// before the poller reports that data, is reported with it and never
// again, and the short read that returns the data leaves the close unread.
// So a prober wakes any wait that follows a short read and has lasted
// between probeEvery and twice that (a read deadline in the past, marked
// as a probe, not an error); the woken reader starts a new session, whose
// first read finds the close or EAGAIN. A server that closes in the middle
// of a stream is thus seen at most 2 × probeEvery late; a wait after
// EAGAIN misses nothing and is never probed, so a probe costs at most the
// one empty read per event that Go would have made. Bodies that end at the
// server's close are read the plain way (plainRead): their end must not
// wait for a probe.
//
// The session holds the connection's read lock, so it must end (endRead)
// before the connection is closed, made idle (the liveness peek reads it)
// or read another way. Only the goroutine that reads the response may call
// Read and endRead. Cancellation (cancel, then a deadline in the past)
// ends a waiting read as it would a net.Conn.Read.
type sockReader struct {
	nc      net.Conn
	rc      syscall.RawConn
	pr      *prober
	next    func() (int, error, bool) // the session's next read; nil: no session
	stop    func()
	p       []byte // the buffer of the read asked for
	drained bool   // the last read was short: wait before reading again
	tracked bool   // the session has seen EAGAIN: the poller has seen every arrival since
	plain   bool   // read with nc.Read (plainRead)

	waiting   atomic.Uint64 // the prober's tick when a drained wait began; 0: not waiting
	poked     atomic.Bool   // the prober set a deadline in the past
	cancelled atomic.Bool   // the request was cancelled (its deadline is real)
	slot      int           // index in pr.readers; -1: not registered (pr.mu)
}

// probeEvery is the prober's period (see sockReader).
const probeEvery = 50 * time.Millisecond

// sockReads turns sockReader on; benchmarks turn it off to compare with
// Go's own reads.
var sockReads = true

// newSockReader returns a sockReader for nc, or nil when nc is no plain
// socket (TLS, in-memory pipes): those are read as they are.
func newSockReader(nc net.Conn, pr *prober) *sockReader {
	if !sockReads {
		return nil
	}
	switch nc.(type) {
	case *net.TCPConn, *net.UnixConn:
	default:
		return nil
	}
	rc, err := nc.(syscall.Conn).SyscallConn()
	if err != nil {
		return nil
	}
	return &sockReader{nc: nc, rc: rc, pr: pr, slot: -1}
}

// Read implements io.Reader with net.Conn.Read's results and errors.
func (s *sockReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if s.plain {
		return s.nc.Read(p)
	}
	if s.next == nil {
		s.pr.add(s)
		s.next, s.stop = iter.Pull2(s.session)
	}
	s.p = p
	n, err, ok := s.next()
	s.p = nil
	if !ok { // the session ended with an error already returned
		s.endRead()
		return 0, io.EOF
	}
	if err != nil {
		s.endRead()
	}
	return n, err
}

// session is the coroutine: raw read sessions yielding each read's count
// (or the error that ended them) to Read. A probe starts a new one.
func (s *sockReader) session(yield func(int, error) bool) {
	for {
		var rerr error
		stopped := false
		s.drained, s.tracked = false, false // a new session's readiness starts unknown
		err := s.rc.Read(func(fd uintptr) bool {
			for {
				if s.drained {
					s.drained = false
					s.waiting.Store(s.pr.tick.Load())
					return false // wait for readability, keeping what the poller saw
				}
				s.waiting.Store(0)
				n, err := syscall.Read(int(fd), s.p)
				switch {
				case err == syscall.EINTR:
					continue
				case err == syscall.EAGAIN:
					s.tracked = true // from here on, the poller reports every arrival
					return false
				case err != nil:
					rerr = os.NewSyscallError("read", err)
					return true
				case n == 0:
					rerr = io.EOF
					return true
				}
				s.drained = s.tracked && n < len(s.p)
				if !yield(n, nil) {
					stopped = true
					return true
				}
			}
		})
		s.waiting.Store(0)
		switch {
		case stopped:
			return
		case rerr == io.EOF:
			yield(0, io.EOF)
			return
		case rerr == nil && errors.Is(err, os.ErrDeadlineExceeded) && s.poked.Swap(false):
			// A probe: lift its deadline, unless the request was
			// cancelled meanwhile (cancel marks, then sets a deadline:
			// checked after the lift, either is seen).
			_ = s.nc.SetReadDeadline(time.Time{})
			if !s.cancelled.Load() {
				continue
			}
			rerr = os.ErrDeadlineExceeded
		case rerr == nil:
			if oe, ok := err.(*net.OpError); ok {
				err = oe.Err // the raw read's own wrapping; rewrapped as a read's below
			}
			rerr = err
		}
		yield(0, &net.OpError{Op: "read", Net: s.nc.LocalAddr().Network(), Source: s.nc.LocalAddr(), Addr: s.nc.RemoteAddr(), Err: rerr})
		return
	}
}

// endRead ends the read session, if one is open (s may be nil).
func (s *sockReader) endRead() {
	if s == nil || s.stop == nil {
		return
	}
	s.stop()
	s.next, s.stop = nil, nil
	s.pr.remove(s)
	if s.poked.Swap(false) && !s.cancelled.Load() {
		_ = s.nc.SetReadDeadline(time.Time{}) // a probe that came as the session ended
	}
}

// cancel marks the request as cancelled, before its deadline is set in the
// past (s may be nil).
func (s *sockReader) cancel() {
	if s != nil {
		s.cancelled.Store(true)
	}
}

// reuse readies a connection's reader for its next request: not
// cancelled, sessions again (s may be nil).
func (s *sockReader) reuse() {
	if s != nil {
		s.cancelled.Store(false)
		s.plain = false
	}
}

// plainRead makes the rest of the response read by nc.Read: a body that
// ends at the server's close (s may be nil).
func (s *sockReader) plainRead() {
	if s != nil {
		s.endRead()
		s.plain = true
	}
}

// prober wakes the sockReaders of a transport that have waited too long
// (see sockReader). Its goroutine runs while a session is open.
type prober struct {
	tick    atomic.Uint64 // probe periods since the goroutine started, from 1
	probes  atomic.Int64  // waits woken by a probe (for tests)
	mu      sync.Mutex
	readers []*sockReader // the open sessions
	running bool
}

func (pr *prober) add(s *sockReader) {
	pr.mu.Lock()
	s.slot = len(pr.readers)
	pr.readers = append(pr.readers, s)
	if !pr.running {
		pr.running = true
		pr.tick.CompareAndSwap(0, 1) // 0 means "not waiting" in sockReader.waiting
		go pr.run()
	}
	pr.mu.Unlock()
}

func (pr *prober) remove(s *sockReader) {
	pr.mu.Lock()
	if i := s.slot; i >= 0 {
		last := len(pr.readers) - 1
		pr.readers[i] = pr.readers[last]
		pr.readers[i].slot = i
		pr.readers[last] = nil
		pr.readers = pr.readers[:last]
		s.slot = -1
	}
	pr.mu.Unlock()
}

// run probes every probeEvery until no session is open.
func (pr *prober) run() {
	t := time.NewTicker(probeEvery)
	defer t.Stop()
	past := time.Unix(1, 0)
	for range t.C {
		now := pr.tick.Add(1)
		pr.mu.Lock()
		if len(pr.readers) == 0 {
			pr.running = false
			pr.mu.Unlock()
			return
		}
		for _, s := range pr.readers {
			// Waiting since at least one whole period.
			if w := s.waiting.Load(); w != 0 && w+1 < now && !s.poked.Load() {
				s.poked.Store(true)
				_ = s.nc.SetReadDeadline(past)
				pr.probes.Add(1)
			}
		}
		pr.mu.Unlock()
	}
}
