package rundir

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
)

// LockFile is the name of the lock file in a claimed folder.
const LockFile = ".surge.lock"

func lockPath(dir string) string { return filepath.Join(dir, LockFile) }

// lock is a held lock file.
type lock struct {
	f    *os.File
	path string
	// stale is the holder a lock file still named when it was taken: a
	// run that ended without releasing it (killed, or its machine lost
	// power); zero when the file was new or empty.
	stale Holder
}

// record writes h into the lock file, for the message another run prints.
func (l *lock) record(h Holder) error {
	b, err := json.Marshal(h)
	if err != nil {
		return fileError(l.path, err)
	}
	if err := l.f.Truncate(0); err != nil {
		return fileError(l.path, err)
	}
	if _, err := l.f.WriteAt(append(b, '\n'), 0); err != nil {
		return fileError(l.path, err)
	}
	return nil
}

// readHolder reads what a lock file records; zero fields for what it does
// not (a lock file whose holder has not written it yet, or not surge's).
func readHolder(f *os.File) Holder {
	b, _ := io.ReadAll(io.LimitReader(io.NewSectionReader(f, 0, 4096), 4096))
	var h Holder
	_ = json.Unmarshal(b, &h) // best effort: the message says less
	return h
}
