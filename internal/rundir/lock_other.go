//go:build !unix

package rundir

import (
	"errors"
	"io/fs"
	"os"
)

// lockReleasedOnExit: without flock, a lock file outlives a run that dies
// without Close, and must then be removed by hand.
const lockReleasedOnExit = false

// gate does nothing here: there is no lock that waits.
func gate(string) (release func()) { return func() {} }

// acquire creates dir's lock file, which must not exist.
func acquire(dir string) (*lock, error) {
	path := lockPath(dir)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		var h Holder
		if g, err := os.Open(path); err == nil {
			h = readHolder(g)
			g.Close()
		}
		return nil, &BusyError{Path: dir, Holder: h}
	}
	if err != nil {
		return nil, &folderError{path, err}
	}
	return &lock{f: f, path: path}, nil
}

// release closes and removes the lock file (an open file cannot be removed
// everywhere).
func (l *lock) release() error {
	cerr := l.f.Close()
	if err := os.Remove(l.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fileError(l.path, err)
	}
	if cerr != nil {
		return fileError(l.path, cerr)
	}
	return nil
}
