package rundir

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/scrape"
)

// Run is a run folder read back by Load.
type Run struct {
	Path     string           // the folder
	Manifest *record.Manifest // manifest.json; empty (never nil) when missing or unreadable
	// RecordsFile is requests.jsonl (or requests.jsonl.gz). Load does not
	// read it: Records streams it, so that a run of millions of records is
	// never held in memory.
	RecordsFile string
	Engine      []scrape.Sample // engine.csv; nil when absent or unreadable
	Summary     json.RawMessage // summary.json as written; nil when absent or unreadable
	// EngineAbsent says engine.csv is not there. A run without engine
	// metrics has none, so Load does not call it a problem: the caller,
	// knowing from the manifest or summary.json whether the run scraped,
	// does (run.Reload).
	EngineAbsent bool
	// Torn is the length in bytes of a last line cut off without its
	// newline (a run killed in the middle of a write); Records reads the
	// file up to the line before it. 0 when the file ends whole.
	Torn  int64
	whole int64 // the length of requests.jsonl up to its last newline; -1 = all of it (gzipped)
	// Problems names each file that was missing or unreadable and what
	// that costs, one line per file, e.g. "manifest.json: missing: …".
	// A folder from an older surge version or one that lost a file still
	// loads: only the records are indispensable.
	Problems []string
}

// ErrNoRecords is wrapped by Load's error when the folder has no records
// file: there is nothing to re-analyse.
var ErrNoRecords = errors.New("no requests.jsonl (or requests.jsonl.gz): nothing to re-analyse")

// Load reads the run folder path: manifest.json, engine.csv and
// summary.json as far as they are there and readable — each one that is
// not is named in Run.Problems, and the run loads without it. The records
// file, requests.jsonl (or requests.jsonl.gz), must be there; it is read
// when Records streams it.
func Load(path string) (*Run, error) {
	run := &Run{Path: path, Manifest: new(record.Manifest)}
	rp, ok := recordsPath(path)
	if !ok {
		return nil, fmt.Errorf("rundir: %s: %w", path, ErrNoRecords)
	}
	run.RecordsFile = rp
	run.whole = -1
	if filepath.Ext(rp) != ".gz" {
		whole, size, err := wholeLines(rp)
		if err != nil {
			return nil, fmt.Errorf("rundir: %w", fileError(rp, err))
		}
		run.whole = whole
		if whole >= 0 {
			run.Torn = size - whole
		}
		if run.Torn > 0 {
			run.Problems = append(run.Problems, fmt.Sprintf("%s: its last line is cut off (%d bytes without a newline: the run ended in the middle of writing it) — it is left out, and its arrival counts as not recorded", recordsFile, run.Torn))
		}
	}

	mp := filepath.Join(path, manifestFile)
	if b, err := os.ReadFile(mp); err != nil {
		run.problem(manifestFile, err, "the target, model, options and plan are unknown: defaults are used and the phases are taken from the records")
	} else if err := json.Unmarshal(b, run.Manifest); err != nil {
		*run.Manifest = record.Manifest{}
		run.problem(manifestFile, err, "the target, model, options and plan are unknown: defaults are used and the phases are taken from the records")
	}

	ep := filepath.Join(path, engineFile)
	if f, err := os.Open(ep); err == nil {
		run.Engine, err = scrape.ReadCSV(f)
		f.Close()
		if err != nil {
			run.Engine = nil
			run.problem(engineFile, err, EngineCost)
		}
	} else if errors.Is(err, fs.ErrNotExist) {
		run.EngineAbsent = true
	} else {
		run.problem(engineFile, err, EngineCost)
	}

	sp := filepath.Join(path, "summary.json")
	if b, err := os.ReadFile(sp); err == nil {
		if !json.Valid(b) {
			run.problem("summary.json", errors.New("not valid JSON"), summaryCost)
		} else {
			run.Summary = b
		}
	} else if errors.Is(err, fs.ErrNotExist) {
		run.problem("summary.json", fs.ErrNotExist, summaryCost)
	} else {
		run.problem("summary.json", err, summaryCost)
	}
	return run, nil
}

// Records calls fn for every record of the run, in file order, reading
// requests.jsonl as it goes; fn must not keep the record it is given (copy
// it to keep it). Errors name the file and line, a truncated last line
// included.
func (r *Run) Records(fn func(*record.Record) error) error {
	if r.whole < 0 {
		if err := record.ReadFile(r.RecordsFile, fn); err != nil {
			return fmt.Errorf("rundir: %w", err)
		}
		return nil
	}
	f, err := os.Open(r.RecordsFile)
	if err != nil {
		return fmt.Errorf("rundir: %w", fileError(r.RecordsFile, err))
	}
	defer f.Close()
	if err := record.Read(bufio.NewReaderSize(io.LimitReader(f, r.whole), 64<<10), r.RecordsFile, fn); err != nil {
		return fmt.Errorf("rundir: %w", err)
	}
	return nil
}

// wholeLines returns the length of the file at path up to and including
// its last newline, and its size.
func wholeLines(path string) (whole, size int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, 0, err
	}
	size = fi.Size()
	var magic [2]byte
	if n, _ := f.ReadAt(magic[:], 0); n == 2 && magic == [2]byte{0x1f, 0x8b} {
		return -1, size, nil // gzipped under a plain name: read whole
	}
	buf := make([]byte, 64<<10)
	for end := size; end > 0; {
		start := max(0, end-int64(len(buf)))
		n, err := f.ReadAt(buf[:end-start], start)
		if err != nil && err != io.EOF {
			return 0, 0, err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return start + int64(i) + 1, size, nil
		}
		end = start
	}
	return 0, size, nil
}

// EngineCost is what a run loses without its engine.csv: the engine's
// samples over time.
const EngineCost = "the engine's samples over time are lost: no engine queue evidence (waiting and running requests) for the diagnosis, no engine charts (queue depth, KV-cache use)"

// summaryCost is what a run loses without its summary.json: what only the
// run itself knew (it is written again from the records).
const summaryCost = "what only the run knew is unknown (the burst's prediction and μ, engine scrape status and queue-wait histograms, settle time)"

// problem records that file could not be used, why, and what that costs.
func (r *Run) problem(file string, err error, cost string) {
	why := "unreadable: " + describe(filepath.Join(r.Path, file), err)
	if errors.Is(err, fs.ErrNotExist) {
		why = "missing"
	}
	r.Problems = append(r.Problems, fmt.Sprintf("%s: %s — %s", file, why, cost))
}

// recordsPath is the records file of the run folder path, plain or gzipped.
func recordsPath(path string) (string, bool) {
	for _, name := range []string{recordsFile, recordsFile + ".gz"} {
		p := filepath.Join(path, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p, true
		}
	}
	return "", false
}

// IsRun reports whether path is a run folder: it holds requests.jsonl (or
// requests.jsonl.gz).
func IsRun(path string) bool {
	_, ok := recordsPath(path)
	return ok
}

// Runs returns the run folders in path whose names match pattern (a
// filepath.Match pattern such as "burst-*x"), as paths, in natural order:
// numbers within names compare by value, so burst-2x comes before
// burst-10x.
func Runs(path, pattern string) ([]string, error) {
	all, err := Folders(path, pattern)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(all, func(p string) bool { return !IsRun(p) }), nil
}

// Folders is Runs without the check that each folder holds records: the
// folders a caller expects to be runs, so that it can say which one lost
// its records instead of passing over it in silence.
func Folders(path, pattern string) ([]string, error) {
	if _, err := filepath.Match(pattern, ""); err != nil {
		return nil, fmt.Errorf("rundir: pattern %q: %w", pattern, err)
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, fileError(path, err)
	}
	var names []string
	for _, e := range entries {
		if ok, _ := filepath.Match(pattern, e.Name()); ok && e.IsDir() {
			names = append(names, e.Name())
		}
	}
	slices.SortFunc(names, natural)
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = filepath.Join(path, n)
	}
	return out, nil
}

// natural compares a and b piece by piece, runs of digits by their value
// (then by length, so "05" follows "5"), everything else byte by byte.
func natural(a, b string) int {
	for a != "" && b != "" {
		da, db := digits(a), digits(b)
		if da > 0 && db > 0 {
			na, nb := trimZeros(a[:da]), trimZeros(b[:db])
			if c := cmp.Or(cmp.Compare(len(na), len(nb)), cmp.Compare(na, nb), cmp.Compare(da, db)); c != 0 {
				return c
			}
			a, b = a[da:], b[db:]
			continue
		}
		if c := cmp.Compare(a[0], b[0]); c != 0 {
			return c
		}
		a, b = a[1:], b[1:]
	}
	return cmp.Compare(len(a), len(b))
}

// digits is the length of the run of ASCII digits s starts with.
func digits(s string) int {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

func trimZeros(s string) string {
	for len(s) > 1 && s[0] == '0' {
		s = s[1:]
	}
	return s
}
