package rundir

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Files are the names surge writes into a run or experiment folder. A Dir
// writes no other name, so that Options.Force can always replace what an
// earlier run wrote.
var Files = []string{
	"manifest.json", "requests.jsonl", "requests.jsonl.gz", "engine.csv", "timeseries.csv",
	"summary.json", "results.md", "results.csv", "results.json", "report.html",
	"capacity.json", "sweep.json", "soak.json", "check.json", "check.md",
	"compare.md", "compare.json", "compare.html",
	"coldstart.json", "coldstart.md", "server.log",
	"scaling.json",
}

// isFile reports whether name is one of Files, or the temporary file one of
// them is written to.
func isFile(name string) bool {
	if n, ok := strings.CutPrefix(name, "."); ok {
		if n, ok := strings.CutSuffix(n, ".tmp"); ok {
			name = n
		}
	}
	return slices.Contains(Files, name)
}

// tmpName is the temporary file name is written to before it is renamed
// into place.
func tmpName(name string) string { return "." + name + ".tmp" }

// suffix makes DefaultPath's names distinct: a random start, then one more
// for every call.
var suffix = func() *atomic.Uint32 {
	var b [2]byte
	rand.Read(b[:])
	var u atomic.Uint32
	u.Store(uint32(binary.BigEndian.Uint16(b[:])))
	return &u
}()

// DefaultPath returns the folder for a run given no --out:
// base/<command>-YYYYMMDD-HHMMSS-xxxx, the time being now in its own
// location, xxxx four hex digits. The digits start at random and count up, so that calls within one
// process (65,536 of them) never repeat a name, and two processes started in
// the same second pick the same one with probability 1/65,536 — in which
// case Create refuses the second.
func DefaultPath(base, command string, now time.Time) string {
	n := uint16(suffix.Add(1))
	return filepath.Join(base, fmt.Sprintf("%s-%s-%04x", command, now.Format("20060102-150405"), n))
}

// Options are the options of Create. The zero value refuses a non-empty
// folder and records no owner.
type Options struct {
	// Force reuses a folder that already holds files: surge's own files
	// (Files) and run folders in it (subfolders whose manifest.json surge wrote) are
	// removed first; anything else is left alone.
	Force bool
	// Owner says who holds the folder, e.g. "surge burst". It is recorded in
	// the lock file for the message another run prints.
	Owner string
}

// Dir is a claimed run or experiment folder, and the only writer of its
// files. Its methods are safe for concurrent use, but one file must not be
// written by two goroutines at once.
type Dir struct {
	path string
	lock *lock // nil for a Sub
	root *Dir  // the Dir holding the lock: itself, or the Dir a Sub was made from

	mu      sync.Mutex
	written map[string]bool // names written, or being written
	closed  bool            // of root only
	stale   Holder          // the lock's holder that ended without releasing it
	reserve string          // of root only: the reserve file while it holds space (Reserve)
}

// StaleLock reports the run whose lock this Dir reclaimed: one that ended
// without releasing it (killed with SIGKILL, or its machine lost power),
// as its lock file recorded it.
func (d *Dir) StaleLock() (Holder, bool) {
	return d.stale, d.stale != (Holder{})
}

// StaleNote is the line to print when this Dir reclaimed a stale lock,
// naming the run that left it; "" otherwise.
func (d *Dir) StaleNote() string {
	h, ok := d.StaleLock()
	if !ok {
		return ""
	}
	return "note: " + d.path + " was locked by a run that ended without releasing it (" + h.String() + "): it was killed or its machine stopped; the lock is reclaimed, and what that run wrote is what it recorded before it ended"
}

// Create claims path for one run or experiment. It creates the folder if
// needed, takes its lock (see the package documentation) and refuses a
// folder that holds anything but the lock file unless opt.Force. The error
// is a *BusyError when another run holds the folder, a *NotEmptyError when
// it holds files; those and a folder that cannot be created match ErrFolder.
// A refused Create leaves an existing folder as it found it and removes a
// folder it created.
func Create(path string, opt Options) (*Dir, error) {
	if path == "" {
		return nil, &folderError{path, errors.New("no folder given")}
	}
	_, statErr := os.Stat(path)
	created := errors.Is(statErr, fs.ErrNotExist)
	if err := os.MkdirAll(path, 0o755); err != nil {
		return nil, &folderError{path, err}
	}
	release := gate(path)
	defer release()
	d, err := claim(path, opt)
	if err != nil && created {
		os.Remove(path) // only if empty: another run may have claimed it meanwhile
	}
	return d, err
}

// claim takes the lock of the existing folder path and prepares the folder.
func claim(path string, opt Options) (*Dir, error) {
	l, err := acquire(path)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*Dir, error) {
		l.release()
		return nil, err
	}
	stale := l.stale
	if err := prepare(path, opt.Force); err != nil {
		return fail(err)
	}
	if err := l.record(Holder{PID: os.Getpid(), Owner: opt.Owner, Started: time.Now()}); err != nil {
		return fail(err)
	}
	d := &Dir{path: path, lock: l, written: map[string]bool{}, stale: stale}
	d.root = d
	return d, nil
}

// prepare checks that path holds nothing but its lock file or, with force,
// removes surge's files and earlier run folders from it.
func prepare(path string, force bool) error {
	entries, err := os.ReadDir(path)
	if err != nil {
		return &folderError{path, err}
	}
	var names []string
	var ours []fs.DirEntry
	for _, e := range entries {
		if e.Name() == LockFile {
			continue
		}
		if e.Name() == ReserveFile { // a killed run's
			dropReserve(path)
			continue
		}
		name := e.Name()
		if e.IsDir() {
			name += "/"
		}
		names = append(names, name)
		if isOurs(path, e) {
			ours = append(ours, e)
		}
	}
	if len(names) == 0 {
		return nil
	}
	if !force {
		return &NotEmptyError{Path: path, Entries: names, Run: len(ours) > 0}
	}
	for _, e := range ours {
		p := filepath.Join(path, e.Name())
		if !e.IsDir() {
			if err := os.Remove(p); err != nil {
				return fileError(p, err)
			}
			continue
		}
		if !isRunFolder(p) {
			// An experiment folder nested in this one (burst --baseline-rps
			// auto's capacity/), which holds only surge's files and runs.
			if err := prepare(p, true); err != nil {
				return err
			}
			if err := os.Remove(p); err != nil {
				return fileError(p, err)
			}
			continue
		}
		if err := removeRun(p); err != nil {
			return err
		}
	}
	return nil
}

// isOurs reports whether entry e of folder path is surge's: one of Files, a
// run folder — a folder whose manifest.json says surge wrote it — or an
// experiment folder holding run folders. Any
// other folder, even one holding a manifest.json of its own (a web app's,
// a browser extension's), is someone else's and never removed.
func isOurs(path string, e fs.DirEntry) bool {
	if e.IsDir() {
		p := filepath.Join(path, e.Name())
		return isRunFolder(p) || isExperimentFolder(p)
	}
	return e.Type().IsRegular() && isFile(e.Name())
}

// isExperimentFolder reports whether the folder p is an experiment's
// without being a run folder itself — the capacity/ search that burst
// --baseline-rps auto runs first: it holds run folders and nothing but
// surge's files and run folders. A folder holding anything else is left
// alone, whatever it also holds.
func isExperimentFolder(p string) bool {
	entries, err := os.ReadDir(p)
	if err != nil {
		return false
	}
	runs := 0
	for _, e := range entries {
		switch {
		case e.Name() == LockFile:
		case e.IsDir() && isRunFolder(filepath.Join(p, e.Name())):
			runs++
		case e.Type().IsRegular() && isFile(e.Name()):
		default:
			return false
		}
	}
	return runs > 0
}

// isRunFolder reports whether the folder p holds a manifest.json written
// by surge ("tool": "surge"), finished or not.
func isRunFolder(p string) bool {
	mp := filepath.Join(p, manifestFile)
	fi, err := os.Stat(mp)
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	b, err := os.ReadFile(mp)
	if err != nil {
		return false
	}
	var m struct {
		Tool string `json:"tool"`
	}
	return json.Unmarshal(b, &m) == nil && m.Tool == "surge"
}

// removeRun removes the run folder p, unless a run holds it.
func removeRun(p string) error {
	release := gate(p)
	defer release()
	if _, err := os.Stat(lockPath(p)); err == nil {
		l, err := acquire(p)
		if err != nil {
			return err
		}
		l.release()
	}
	if err := os.RemoveAll(p); err != nil {
		return fileError(p, err)
	}
	return nil
}

// Path is the folder's path, as given to Create (joined with Sub's names).
func (d *Dir) Path() string { return d.path }

// Close releases the folder: the lock file is removed and the lock dropped.
// Close of a Sub does nothing. After Close the Dir and its subs write
// nothing more; close the writers of Records and EngineCSV first.
func (d *Dir) Close() error {
	if d.lock == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	if d.reserve != "" {
		os.Remove(d.reserve)
		d.reserve = ""
	}
	release := gate(d.path)
	defer release()
	return d.lock.release()
}

// Sub makes a run folder inside d, e.g. "burst-5x", for one level of an
// experiment. It must not exist, or be empty. d's lock covers it: a Sub has
// no lock of its own, and its Close does nothing.
func (d *Dir) Sub(name string) (*Dir, error) {
	if err := validName(name); err != nil {
		return nil, fmt.Errorf("rundir: %s: sub folder %q: %w", d.path, name, err)
	}
	if err := d.root.open(); err != nil {
		return nil, err
	}
	p := filepath.Join(d.path, name)
	if err := os.Mkdir(p, 0o755); err != nil {
		if !errors.Is(err, fs.ErrExist) {
			return nil, fileError(p, err)
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			return nil, fileError(p, err)
		}
		if len(entries) > 0 {
			e := &NotEmptyError{Path: p}
			for _, x := range entries {
				n := x.Name()
				if x.IsDir() {
					n += "/"
				}
				e.Entries = append(e.Entries, n)
				e.Run = e.Run || isOurs(p, x)
			}
			return nil, e
		}
	}
	return &Dir{path: p, root: d.root, written: map[string]bool{}}, nil
}

// validName checks that name is one path element that is not the lock file.
func validName(name string) error {
	switch {
	case name == "" || name == "." || name == "..":
		return errors.New("not a name")
	case strings.ContainsAny(name, `/\`) || filepath.Base(name) != name:
		return errors.New("not a single path element")
	case name == LockFile:
		return errors.New("the lock file")
	}
	return nil
}

// open returns an error once d (a root) is closed.
func (d *Dir) open() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return fmt.Errorf("rundir: %s: closed", d.path)
	}
	return nil
}
