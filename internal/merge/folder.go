package merge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/surge-bench/surge/internal/experiment/rerender"
	"github.com/surge-bench/surge/internal/run"
	"github.com/surge-bench/surge/internal/rundir"
)

// Options are surge merge's settings.
type Options struct {
	Out   string // the merged folder
	Force bool   // reuse a non-empty Out (rundir.Options.Force)
}

// Merged is what Folders did.
type Merged struct {
	Rendered rerender.Rendered // the merged folder's re-render (experiment layout when it is an experiment)
	Runs     []string          // the run folders written, relative to Out ("." for a run)
	Records  int64
	Warnings []string
}

// runPatterns are the run folders an experiment's folder holds, merged
// pairwise by name: a burst's multipliers (and their repeats), a
// repeated run's reps, a capacity search's steps and a sweep's levels.
var runPatterns = []string{"burst-*x", "rep-*", "step-*", "level-*"}

// Folders merges the shards' folders dirs into o.Out and re-renders it,
// its report written to w. dirs are all run folders (one run's shards) or
// all experiment folders whose run folders (burst-<k>x, rep-*, step-*,
// level-*, one level deep and burst-<k>x/rep-* below) are merged by name,
// each set of shards checked as Open does. Everything is checked before
// anything is written.
func Folders(ctx context.Context, dirs []string, o Options, w io.Writer) (*Merged, error) {
	if o.Out == "" {
		return nil, refuse("no output folder (-o OUT)")
	}
	outAbs, _ := filepath.Abs(o.Out)
	for _, d := range dirs {
		if a, _ := filepath.Abs(d); a == outAbs {
			return nil, refuse("-o %s is one of the shard folders: write the merge to a new folder", o.Out)
		}
	}
	rels, err := runsOf(dirs)
	if err != nil {
		return nil, err
	}
	groups := make([][]Shard, len(rels))
	for i, rel := range rels {
		paths := make([]string, len(dirs))
		for j, d := range dirs {
			paths[j] = filepath.Join(d, rel)
		}
		if groups[i], err = Open(paths); err != nil {
			return nil, err
		}
	}
	_, statErr := os.Stat(o.Out)
	created := errors.Is(statErr, os.ErrNotExist)
	out, err := rundir.Create(o.Out, rundir.Options{Force: o.Force, Owner: "surge merge"})
	if err != nil {
		return nil, err
	}
	// fail gives up: a folder the merge created is removed (a record that
	// belongs to no shard is found only while merging), so that no half
	// merge is left to be mistaken for a run.
	fail := func(err error) (*Merged, error) {
		out.Close()
		if created {
			os.RemoveAll(o.Out)
		}
		return nil, err
	}
	m := &Merged{Runs: rels}
	for i, rel := range rels {
		d := out
		if rel != "." {
			for _, part := range strings.Split(filepath.ToSlash(rel), "/") {
				if d, err = d.Sub(part); err != nil {
					return fail(err)
				}
			}
		}
		res, err := Runs(ctx, groups[i], d)
		if err != nil {
			return fail(err)
		}
		m.Records += res.Records
		m.Warnings = append(m.Warnings, warnings(rel, res)...)
	}
	if err := out.Close(); err != nil {
		return nil, err
	}
	for _, s := range m.Warnings {
		fmt.Fprintln(w, "WARNING: "+s)
	}
	if rels[0] == "." || slices.ContainsFunc(rels, func(r string) bool { return strings.HasPrefix(r, "burst-") || strings.HasPrefix(r, "rep-") }) {
		m.Rendered, err = rerender.Folder(o.Out, w)
		return m, err
	}
	// A capacity search's or sweep's own table holds each shard's search
	// decisions, which a merge does not redo: each merged step or level
	// is re-rendered alone.
	fmt.Fprintf(w, "%s: a capacity search's or sweep's own table is not re-rendered (it holds each shard's decisions); each of its %d merged run folders is re-rendered alone\n", o.Out, len(rels))
	for _, rel := range rels {
		r, err := rerender.Folder(filepath.Join(o.Out, rel), w)
		if err != nil {
			return m, err
		}
		m.Rendered = r
	}
	return m, nil
}

// runsOf is the run folders to merge, relative to each of dirs: "." when
// every dir is a run folder, else the run folders of an experiment, which
// every dir must hold alike.
func runsOf(dirs []string) ([]string, error) {
	if len(dirs) < 1 {
		return nil, refuse("no shard folders given (surge merge DIR… -o OUT)")
	}
	runs := 0
	for _, d := range dirs {
		st, err := os.Stat(d)
		switch {
		case err != nil:
			return nil, refuse("%s: %v", d, errors.Unwrap(err))
		case !st.IsDir():
			return nil, refuse("%s: not a folder (give a shard's run folder, not one of its files)", d)
		}
		if rundir.IsRun(d) {
			runs++
		}
	}
	if runs == len(dirs) {
		return []string{"."}, nil
	}
	if runs > 0 {
		good := dirs[slices.IndexFunc(dirs, rundir.IsRun)]
		bad := dirs[slices.IndexFunc(dirs, func(d string) bool { return !rundir.IsRun(d) })]
		return nil, refuse("%s: not a run folder (no requests.jsonl), while %s is: give the shards' run folders, each written with --shard I/N", bad, good)
	}
	var first []string
	for i, d := range dirs {
		rels := experimentRuns(d)
		if len(rels) == 0 {
			return nil, refuse("%s: not a run folder (no requests.jsonl) nor an experiment's folder (no burst-<k>x, rep-*, step-* or level-* run folders): give the folders surge run, burst or capacity with --shard I/N wrote", d)
		}
		if rundir.IsRun(d) {
			return nil, refuse("%s is a run folder and %s an experiment's: give the shards of one run, or of one experiment", d, dirs[0])
		}
		if i == 0 {
			first = rels
			continue
		}
		for _, r := range first {
			if !slices.Contains(rels, r) {
				return nil, refuse("%s has %s, %s does not: the shards are not one experiment (%s)", dirs[0], r, d, whyApart(r))
			}
		}
		for _, r := range rels {
			if !slices.Contains(first, r) {
				return nil, refuse("%s has %s, %s does not: the shards are not one experiment (%s)", d, r, dirs[0], whyApart(r))
			}
		}
	}
	return first, nil
}

// whyApart says why shards of an experiment may hold different runs.
func whyApart(rel string) string {
	if strings.HasPrefix(rel, "step-") || strings.HasPrefix(rel, "level-") {
		return "each shard's capacity search or sweep chose its next step from what that shard saw, and theirs went apart; merge the steps they share one by one, e.g. surge merge " + filepath.Join("SHARD0", "step-01-…") + " " + filepath.Join("SHARD1", "step-01-…") + " -o OUT"
	}
	return "a shard cut short, or run with other settings"
}

// experimentRuns lists an experiment folder's run folders, relative to it.
func experimentRuns(dir string) []string {
	var rels []string
	for _, p := range runPatterns {
		subs, _ := rundir.Folders(dir, p)
		for _, s := range subs {
			name := filepath.Base(s)
			if rundir.IsRun(s) {
				rels = append(rels, name)
				continue
			}
			reps, _ := rundir.Runs(s, "rep-*")
			for _, r := range reps {
				rels = append(rels, filepath.Join(name, filepath.Base(r)))
			}
		}
	}
	return rels
}

// warnings says what the merged run's reader must know: shards that did
// not start together, and shards that each had their own engine.
func warnings(rel string, res *Result) []string {
	var out []string
	scope := ""
	if rel != "." {
		scope = rel + ": "
	}
	if res.Skew > run.StartSkewWarn {
		out = append(out, fmt.Sprintf("%sthe shards' origins were %s apart (start skew): the target saw the shards' arrivals shifted by up to that, not the planned schedule; records are placed at their wall-clock times (start the shards with --start-at and synchronised clocks)", scope, res.Skew.Round(time.Millisecond)))
	}
	if res.OutOfOrder > 0 {
		out = append(out, fmt.Sprintf("%s%d records are out of seq order in the merged requests.jsonl: their shard's file had them more than %d records late (a long request among many short ones); every record is there, and the analysis does not depend on the order", scope, res.OutOfOrder, windowOf(len(res.Shards))))
	}
	m := res.Shards[0].Manifest
	switch {
	case m.VirtualTime:
		out = append(out, fmt.Sprintf("%sthe shards ran in virtual time (--simulate), each against its own engine model, which saw only its 1/%d of the load: the merged latencies are not those of one engine under the whole load", scope, len(res.Shards)))
	case m.Simulated && m.Target == "built-in simulator":
		out = append(out, fmt.Sprintf("%sthe shards ran without --target, each against its own in-process simulator, which saw only its 1/%d of the load: give every shard the same --target to test one engine", scope, len(res.Shards)))
	}
	return out
}
