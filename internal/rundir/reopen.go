package rundir

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Reopen claims the existing folder path to write its derived files again
// (surge report): it takes the folder's lock like Create — a run still
// writing there makes it a *BusyError — but keeps what the folder holds.
func Reopen(path string, owner string) (*Dir, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, &folderError{path, err}
	}
	if !st.IsDir() {
		return nil, &folderError{path, fmt.Errorf("not a folder")}
	}
	release := gate(path)
	defer release()
	l, err := acquire(path)
	if err != nil {
		return nil, err
	}
	stale := l.stale
	dropReserve(path) // a killed run's, if any
	if err := l.record(Holder{PID: os.Getpid(), Owner: owner, Started: time.Now()}); err != nil {
		l.release()
		return nil, err
	}
	d := &Dir{path: path, lock: l, written: map[string]bool{}, stale: stale}
	d.root = d
	return d, nil
}

// Existing is the run folder name inside d as it is, for writing its
// derived files again; like a Sub, it is covered by d's lock.
func (d *Dir) Existing(name string) (*Dir, error) {
	if err := validName(name); err != nil {
		return nil, fmt.Errorf("rundir: %s: sub folder %q: %w", d.path, name, err)
	}
	if err := d.root.open(); err != nil {
		return nil, err
	}
	p := filepath.Join(d.path, name)
	if st, err := os.Stat(p); err != nil || !st.IsDir() {
		return nil, fileError(p, fmt.Errorf("not a run folder"))
	}
	return &Dir{path: p, root: d.root, written: map[string]bool{}}, nil
}
