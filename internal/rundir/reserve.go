package rundir

import (
	"fmt"
	"os"
	"path/filepath"
)

// ReserveFile is the name of the space a run keeps in reserve, in the
// folder that holds its lock.
const ReserveFile = ".surge.reserve"

// ReserveSize is the space a run keeps in reserve: room, once the disk
// is full, for the records of the requests then in flight and for the
// results (manifest, summary, reports), so that a full disk ends a run as
// a partial run that says so instead of a folder without its results.
const ReserveSize = 8 << 20

// Reserve sets aside ReserveSize bytes in the folder that holds d's lock,
// for ReleaseReserve to give back when the disk fills up. Where the space
// cannot be set aside (the disk is already nearly full) it returns the
// error and the run goes on without a reserve. Close removes the file; a
// reserve a killed run left behind is removed by the next Create or
// Reopen of its folder.
func (d *Dir) Reserve() error {
	r := d.root
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.reserve != "" {
		return nil
	}
	p := filepath.Join(r.path, ReserveFile)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fileError(p, err)
	}
	err = allocate(f, ReserveSize)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(p)
		return fileError(p, fmt.Errorf("setting aside %d MB: %w", ReserveSize>>20, err))
	}
	r.reserve = p
	return nil
}

// ReleaseReserve gives the reserved space back to the file system and
// reports whether there was any to give.
func (d *Dir) ReleaseReserve() bool {
	r := d.root
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.reserve == "" {
		return false
	}
	err := os.Remove(r.reserve)
	r.reserve = ""
	return err == nil
}

// dropReserve removes a reserve file left in path by a run that ended
// without Close.
func dropReserve(path string) {
	os.Remove(filepath.Join(path, ReserveFile)) // absent is the usual case
}

// allocate makes f hold n bytes on disk: blocks allocated, not a sparse
// file that a full disk could not fill in later.
func allocate(f *os.File, n int64) error {
	if err := fallocate(f, n); err == nil {
		return nil
	}
	// No fallocate here: write the bytes.
	buf := make([]byte, 64<<10)
	for off := int64(0); off < n; off += int64(len(buf)) {
		if _, err := f.WriteAt(buf[:min(int64(len(buf)), n-off)], off); err != nil {
			return err
		}
	}
	return f.Sync()
}
