package rundir

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/surge-bench/surge/internal/record"
)

// The files a Dir writes through dedicated methods.
const (
	manifestFile = "manifest.json"
	recordsFile  = "requests.jsonl"
	engineFile   = "engine.csv"
)

// begin checks that name may be written into d now and marks it written;
// once reports whether a second write is an error.
func (d *Dir) begin(name string, once bool) (path string, err error) {
	if !slices.Contains(Files, name) {
		return "", fmt.Errorf("rundir: %s: %q is not one of surge's run files (rundir.Files), which --force could not replace", d.path, name)
	}
	path = filepath.Join(d.path, name)
	if err := d.root.open(); err != nil {
		return "", err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if once && d.written[name] {
		return "", fmt.Errorf("rundir: %s: already written", path)
	}
	d.written[name] = true
	return path, nil
}

// abandon unmarks name after a failed write, so that it can be tried again.
func (d *Dir) abandon(name string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.written, name)
}

// Records creates requests.jsonl, for the records of the run. The caller
// closes the writer, and checks its Err for a failed write.
func (d *Dir) Records() (*record.Writer, error) {
	path, err := d.begin(recordsFile, true)
	if err != nil {
		return nil, err
	}
	w, err := record.Create(path)
	if err != nil {
		d.abandon(recordsFile)
		return nil, fileError(path, errors.Unwrap(err))
	}
	return w, nil
}

// RecordsSource streams the records written to requests.jsonl (after
// its writer is closed): the run's records for its analysis, read once
// rather than held in memory.
func (d *Dir) RecordsSource() record.Source {
	return record.FileSource(filepath.Join(d.Path(), recordsFile))
}

// EngineCSV creates engine.csv, for scrape.NewCSVWriter. Its write errors
// name the file. The caller closes it.
func (d *Dir) EngineCSV() (io.WriteCloser, error) {
	path, err := d.begin(engineFile, true)
	if err != nil {
		return nil, err
	}
	f, err := os.Create(path)
	if err != nil {
		d.abandon(engineFile)
		return nil, fileError(path, err)
	}
	return f, nil
}

// Log creates the file name (one of Files, e.g. "server.log") for the
// output of a process surge started, which writes to it directly. The
// caller closes it.
func (d *Dir) Log(name string) (*os.File, error) {
	path, err := d.begin(name, true)
	if err != nil {
		return nil, err
	}
	f, err := os.Create(path)
	if err != nil {
		d.abandon(name)
		return nil, fileError(path, err)
	}
	return f, nil
}

// RemoveEngineCSV removes engine.csv (closed by then), for a run in which
// no engine metric was ever available. Removing a file that is not there
// is not an error.
func (d *Dir) RemoveEngineCSV() error {
	path := filepath.Join(d.path, engineFile)
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fileError(path, err)
	}
	d.abandon(engineFile)
	return nil
}

// WriteJSON writes v to the file name (one of Files, e.g. "summary.json")
// as indented JSON and a newline.
func (d *Dir) WriteJSON(name string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fileError(filepath.Join(d.path, name), err)
	}
	return d.WriteFile(name, func(w io.Writer) error {
		_, err := w.Write(append(b, '\n'))
		return err
	})
}

// WriteManifest writes manifest.json, replacing empty descriptive fields of
// m with record.NA. Unlike every other file, the manifest may be written
// again: when a run starts and when it ends. Each write replaces the file
// whole.
func (d *Dir) WriteManifest(m *record.Manifest) error {
	path, err := d.begin(manifestFile, false)
	if err != nil {
		return err
	}
	return d.replace(manifestFile, path, func(w io.Writer) error { return record.EncodeManifest(w, m) })
}

// WriteFile writes the file name (one of Files, e.g. "results.md") with fn,
// through a buffer. The file appears whole, or not at all: fn writes to a
// temporary file that is renamed into place once fn, the flush and the
// close have succeeded. Errors, fn's included, name the file.
func (d *Dir) WriteFile(name string, fn func(io.Writer) error) error {
	path, err := d.begin(name, true)
	if err != nil {
		return err
	}
	if err := d.replace(name, path, fn); err != nil {
		d.abandon(name)
		return err
	}
	return nil
}

// replace writes path through its temporary file.
func (d *Dir) replace(name, path string, fn func(io.Writer) error) (err error) {
	tmp := filepath.Join(d.path, tmpName(name))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fileError(path, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	bw := bufio.NewWriterSize(f, 64<<10)
	if err := fn(bw); err != nil {
		return fileError(path, err)
	}
	if err := bw.Flush(); err != nil {
		return fileError(path, err)
	}
	if err := f.Close(); err != nil {
		return fileError(path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fileError(path, err)
	}
	return nil
}
