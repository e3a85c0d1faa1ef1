package rundir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"
)

// ErrFolder is matched (errors.Is) by every error that says the folder given
// to Create cannot be used: *BusyError, *NotEmptyError, and a folder that
// cannot be created or written. A command treats it as a usage error: the
// user should give another folder.
var ErrFolder = errors.New("rundir: the run folder cannot be used")

// Holder is who holds a folder's lock, as recorded in its lock file.
type Holder struct {
	PID     int       `json:"pid"`     // process id
	Owner   string    `json:"owner"`   // the holder's own description, e.g. "surge burst"
	Started time.Time `json:"started"` // when it took the folder
}

// String describes h for a message, e.g. "pid 4242, surge burst, started
// 10:31:02" (with the date when not today); "" when nothing is known.
func (h Holder) String() string {
	var parts []string
	if h.PID > 0 {
		parts = append(parts, fmt.Sprintf("pid %d", h.PID))
	}
	if h.Owner != "" {
		parts = append(parts, h.Owner)
	}
	if !h.Started.IsZero() {
		t, now := h.Started.Local(), time.Now()
		layout := "2006-01-02 15:04:05"
		if t.Year() == now.Year() && t.YearDay() == now.YearDay() {
			layout = "15:04:05"
		}
		parts = append(parts, "started "+t.Format(layout))
	}
	return strings.Join(parts, ", ")
}

// BusyError says that another run holds the folder.
type BusyError struct {
	Path   string // the folder
	Holder Holder // who holds it; zero fields when not recorded (yet)
}

// Error names the folder and the run that holds it.
func (e *BusyError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "rundir: %s is in use by another run", e.Path)
	if h := e.Holder.String(); h != "" {
		fmt.Fprintf(&b, " (%s)", h)
	}
	b.WriteString("; give another --out")
	if !lockReleasedOnExit {
		fmt.Fprintf(&b, ", or remove %s if no run is using it", lockPath(e.Path))
	}
	return b.String()
}

// Is makes a BusyError match ErrFolder.
func (e *BusyError) Is(target error) bool { return target == ErrFolder }

// NotEmptyError says that the folder already holds files, and Force was not
// given.
type NotEmptyError struct {
	Path    string   // the folder
	Entries []string // what it holds, sorted; folders end in "/"
	Run     bool     // some entries are surge's: a run or experiment was written here
}

// Error names the folder and the first few things in it.
func (e *NotEmptyError) Error() string {
	list := e.Entries
	more := ""
	if len(list) > 3 {
		list, more = list[:3], ", …"
	}
	what := strings.Join(list, ", ") + more
	if e.Run {
		return fmt.Sprintf("rundir: %s already holds a run (%s); give another --out, or --force to replace it", e.Path, what)
	}
	return fmt.Sprintf("rundir: %s is not empty (%s); give another --out, or --force to write into it (files surge did not write are kept)", e.Path, what)
}

// Is makes a NotEmptyError match ErrFolder.
func (e *NotEmptyError) Is(target error) bool { return target == ErrFolder }

// folderError is a folder Create could not make or write: it matches
// ErrFolder and unwraps to the system's error.
type folderError struct {
	path string
	err  error
}

func (e *folderError) Error() string {
	return fmt.Sprintf("rundir: %s: %s; give another --out", e.path, describe(e.path, e.err))
}

func (e *folderError) Unwrap() []error { return []error{ErrFolder, e.err} }

// fileError is an error about the file at path: "rundir: <path>: <what>".
func fileError(path string, err error) error {
	return fmt.Errorf("rundir: %s: %w", path, &described{path, err})
}

// described prints err without repeating path, and unwraps to err.
type described struct {
	path string
	err  error
}

func (d *described) Error() string { return describe(d.path, d.err) }
func (d *described) Unwrap() error { return d.err }

// describe is err's message, without path when err is an *fs.PathError
// about path ("open: permission denied" rather than "open out/x:
// permission denied"), or an *os.LinkError renaming a file to path.
func describe(path string, err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path == path {
		return pe.Op + ": " + pe.Err.Error()
	}
	var le *os.LinkError
	if errors.As(err, &le) && le.New == path {
		return le.Op + ": " + le.Err.Error()
	}
	return err.Error()
}
