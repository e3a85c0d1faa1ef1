package rundir

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
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
	Manifest *record.Manifest // manifest.json
	Records  []record.Record  // requests.jsonl (or requests.jsonl.gz), in file order
	Engine   []scrape.Sample  // engine.csv; nil when absent
	Summary  json.RawMessage  // summary.json as written; nil when absent
}

// Load reads the run folder path: manifest.json and requests.jsonl (or
// requests.jsonl.gz), which must be there, and engine.csv and summary.json
// if they are. Errors name the file, and for requests.jsonl the line (a
// truncated last line included).
func Load(path string) (*Run, error) {
	run := &Run{Path: path}
	mp := filepath.Join(path, manifestFile)
	b, err := os.ReadFile(mp)
	if err != nil {
		return nil, fileError(mp, err)
	}
	run.Manifest = new(record.Manifest)
	if err := json.Unmarshal(b, run.Manifest); err != nil {
		return nil, fileError(mp, err)
	}

	rp, ok := recordsPath(path)
	if !ok {
		return nil, fileError(filepath.Join(path, recordsFile), fs.ErrNotExist)
	}
	if err := record.ReadFile(rp, func(r *record.Record) error {
		run.Records = append(run.Records, *r)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("rundir: %w", err) // names the file and line
	}

	ep := filepath.Join(path, engineFile)
	if f, err := os.Open(ep); err == nil {
		run.Engine, err = scrape.ReadCSV(f)
		f.Close()
		if err != nil {
			return nil, fileError(ep, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fileError(ep, err)
	}

	sp := filepath.Join(path, "summary.json")
	if b, err := os.ReadFile(sp); err == nil {
		if !json.Valid(b) {
			return nil, fileError(sp, errors.New("not valid JSON"))
		}
		run.Summary = b
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fileError(sp, err)
	}
	return run, nil
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
	if _, err := filepath.Match(pattern, ""); err != nil {
		return nil, fmt.Errorf("rundir: pattern %q: %w", pattern, err)
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, fileError(path, err)
	}
	var names []string
	for _, e := range entries {
		if ok, _ := filepath.Match(pattern, e.Name()); ok && e.IsDir() && IsRun(filepath.Join(path, e.Name())) {
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
