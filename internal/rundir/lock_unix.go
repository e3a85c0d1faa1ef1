//go:build unix

package rundir

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockReleasedOnExit: the kernel drops a flock when its holder exits, so a
// lock file is never stale.
const lockReleasedOnExit = true

// gate takes the folder's own flock, held for the few system calls of
// Create and Close (never for a run), and returns its release. Under it a
// lock file is taken and its holder recorded as one step, and Close removes
// the lock file before anyone can open it. Where the folder cannot be
// flocked the gate is skipped: the lock file's flock alone still keeps
// runs apart.
func gate(dir string) (release func()) {
	f, err := os.Open(dir)
	if err != nil {
		return func() {}
	}
	if err := flock(f, syscall.LOCK_EX); err != nil {
		f.Close()
		return func() {}
	}
	return func() { f.Close() } // closing drops the flock
}

// acquire takes dir's lock file without waiting.
func acquire(dir string) (*lock, error) {
	path := lockPath(dir)
	for range 10 {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, &folderError{path, err}
		}
		err = flock(f, syscall.LOCK_EX|syscall.LOCK_NB)
		if errors.Is(err, syscall.EWOULDBLOCK) {
			h := readHolder(f)
			f.Close()
			return nil, &BusyError{Path: dir, Holder: h}
		}
		if err != nil {
			f.Close()
			return nil, fileError(path, fmt.Errorf("flock: %w", err))
		}
		// Without the gate, the holder's Close may have removed the file
		// between our open and our flock: then the lock is on a file no
		// one else will ever open. Take the one at path instead.
		if fi, err := f.Stat(); err == nil {
			if pi, err := os.Stat(path); err == nil && os.SameFile(fi, pi) {
				return &lock{f: f, path: path, stale: readHolder(f)}, nil
			}
		}
		f.Close()
	}
	return nil, fileError(path, errors.New("the lock file keeps being replaced"))
}

// release removes the lock file and then drops the lock, so that no one
// takes a lock on a file that is about to disappear.
func (l *lock) release() error {
	rerr := os.Remove(l.path)
	cerr := l.f.Close()
	if rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
		return fileError(l.path, rerr)
	}
	if cerr != nil {
		return fileError(l.path, cerr)
	}
	return nil
}

// flock calls flock(2) on f, again when interrupted by a signal.
func flock(f *os.File, how int) error {
	return control(f, func(fd int) error { return syscall.Flock(fd, how) })
}

// control calls call with f's descriptor, again while it is interrupted
// by a signal (EINTR).
func control(f *os.File, call func(fd int) error) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var cerr error
	if err := rc.Control(func(fd uintptr) {
		for {
			if cerr = call(int(fd)); cerr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	return cerr
}
