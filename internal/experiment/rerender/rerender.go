// Package rerender is `surge report`: it re-analyses a folder surge wrote
// from the files it keeps and writes its reports again in the layout of
// the command that wrote it — a run, a soak, or a burst experiment — or
// says which layout it uses instead (one step of a capacity search, one
// level of a sweep, one multiplier of a burst: the single-run layout) and
// refuses what it cannot re-render (a capacity search's or a sweep's own
// table). Nothing is sent to any target.
package rerender

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/experiment"
	"github.com/surge-bench/surge/internal/experiment/burst"
	"github.com/surge-bench/surge/internal/experiment/soak"
	"github.com/surge-bench/surge/internal/run"
	"github.com/surge-bench/surge/internal/rundir"
)

// Rendered is what Folder re-rendered.
type Rendered struct {
	// Outcome is the experiment's outcome as a fresh one's: what its
	// verdicts make of the exit code.
	experiment.Outcome
	// Part names the experiment the folder is one run of ("one step of a
	// capacity search"), whose exit code weighs all its runs; empty for a
	// whole experiment.
	Part string
}

// Folder re-renders the folder at path. A path that is not a folder surge
// can re-render is a *run.ConfigError naming it and what to give instead.
func Folder(path string, w io.Writer) (Rendered, error) {
	out, part, err := folder(path, w)
	return Rendered{Outcome: out, Part: part}, err
}

func folder(path string, w io.Writer) (experiment.Outcome, string, error) {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return experiment.Outcome{}, "", bad("report: %s: no such folder (give the folder a surge command wrote, e.g. out/burst-20261129-104500)", path)
	case err != nil:
		return experiment.Outcome{}, "", bad("report: %s: %v", path, errors.Unwrap(err))
	case !st.IsDir():
		return experiment.Outcome{}, "", bad("report: %s: not a folder (give the folder a surge command wrote, not one of its files)", path)
	}
	if rundir.IsRun(path) {
		return runFolder(path, w)
	}
	if runs, err := rundir.Folders(path, "burst-*x"); err == nil && len(runs) > 0 {
		out, err := burst.Rerender(path, w)
		return out, "", err
	}
	if reps, err := rundir.Folders(path, "rep-*"); err == nil && len(reps) > 0 && rundir.IsRun(reps[0]) {
		// surge run --repeat N: rep-1 … rep-N, each a run folder.
		out, err := experiment.RerenderRepeats(path, reps, w)
		return out, "", err
	}
	parent := func(kind, file, pattern, what string) error {
		subs, _ := rundir.Folders(path, pattern)
		if !exists(filepath.Join(path, file)) && len(subs) == 0 {
			return nil
		}
		example := filepath.Join(path, pattern)
		if len(subs) > 0 {
			example = subs[len(subs)-1]
		}
		return bad("report: %s is a %s's folder: surge report does not re-render a %s's own table (%s); give one of its %s folders to re-render that run alone, in the single-run layout: surge report %s", path, kind, kind, what, pattern, example)
	}
	if reps, _ := rundir.Folders(path, "rep-*"); len(reps) > 0 && exists(filepath.Join(reps[0], "capacity.json")) {
		return experiment.Outcome{}, "", bad("report: %s holds repeated capacity searches (rep-*): surge report does not re-render a capacity search's own table; give one of their step-* folders to re-render that run alone: surge report %s", path, filepath.Join(reps[0], "step-*"))
	}
	if err := parent("capacity search", "capacity.json", "step-*", "its steps' search decisions"); err != nil {
		return experiment.Outcome{}, "", err
	}
	if err := parent("sweep", "sweep.json", "level-*", "the knee and the budget break across its levels"); err != nil {
		return experiment.Outcome{}, "", err
	}
	if exists(filepath.Join(path, "compare.json")) {
		return experiment.Outcome{}, "", bad("report: %s holds a comparison (written by surge compare or burst --vary): its report is already written — open %s (or compare.md); %s", path, filepath.Join(path, "compare.html"), compareParts(path))
	}
	return experiment.Outcome{}, "", bad("report: %s holds no run surge wrote: no requests.jsonl, and no burst-<k>x, step-* or level-* run folders", path)
}

// compareParts says how to re-render one part of a comparison folder: a
// --vary folder holds one experiment per value (OUT/<knob>-<value>/).
func compareParts(path string) string {
	subs, _ := os.ReadDir(path)
	for _, s := range subs {
		if s.IsDir() {
			if runs, err := rundir.Folders(filepath.Join(path, s.Name()), "burst-*x"); err == nil && len(runs) > 0 {
				return "to re-render one value's experiment, give its folder: surge report " + filepath.Join(path, s.Name())
			}
		}
	}
	return "to re-render a folder it compares, give that folder to surge report"
}

// runFolder re-renders one run folder in the layout of the command that
// wrote it, as its manifest says (or soak.json, without one), and names
// the experiment it is one run of.
func runFolder(path string, w io.Writer) (experiment.Outcome, string, error) {
	r, err := run.Reload(path)
	if errors.Is(err, rundir.ErrNoRecords) {
		return experiment.Outcome{}, "", &run.ConfigError{Err: err}
	}
	if err != nil {
		return experiment.Outcome{}, "", err
	}
	command := r.Dir.Manifest.Command
	if command == "" && exists(filepath.Join(path, "soak.json")) {
		command = "soak"
	}
	up := filepath.Dir(path)
	var rule analyze.RecoveryRule
	var part string
	switch command {
	case "soak":
		out, err := soak.Rerender(r, w)
		return out, "", err
	case "burst":
		part = "one run of a burst experiment"
		fmt.Fprintf(w, "%s is %s: re-rendered in the single-run layout (one row per phase); for the burst layout, one row per multiplier: surge report %s\n", path, part, up)
		rule = burst.RecoveryRule(r)
	case "capacity":
		part = "one step of a capacity search"
		fmt.Fprintf(w, "%s is %s: re-rendered in the single-run layout (one row per phase); the search's own table (%s) is not re-rendered\n", path, part, filepath.Join(up, "results.md"))
	case "sweep":
		part = "one level of a sweep"
		fmt.Fprintf(w, "%s is %s: re-rendered in the single-run layout (one row per phase); the sweep's own table (%s) is not re-rendered\n", path, part, filepath.Join(up, "results.md"))
	}
	out, err := experiment.RerenderRun(r, rule, w)
	return out, part, err
}

func bad(format string, args ...any) error {
	return &run.ConfigError{Err: fmt.Errorf(format, args...)}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
