// Package compare is `surge compare`: it reads two or more folders of one
// command kind (a surge run, a burst experiment, a capacity search, a
// sweep, or one run of them), lists every setting that differs between
// them, from their manifests, and sets their results side by side: every
// metric of their results.json rows, with its difference and ratio
// against the first folder (the reference).
//
// The method (docs/method.md "Comparing runs"):
//
//   - One variable at a time. When exactly one setting differs the
//     comparison names it; when several do, it warns that it confounds
//     them and names them all. Settings are named as the user sets them
//     (max-waiting, baseline-rps), the simulator's serving_config key by
//     key.
//   - What a folder did not measure — a null value, a column or a row it
//     lacks (a multiplier only the other ran) — is "not tested", never
//     zero and never inferred. A censored value (> 60 s: too many requests
//     timed out to know the percentile) stays a bound, and so do the
//     difference and ratio computed from it: Δ = b − a with a > x known
//     only as Δ < b − x.
//   - Percentiles are never averaged. With repeated runs (rows with "rep"
//     and a pooled row, see docs/method.md) the pooled row is the value —
//     the percentile of the merged observations — and the per-run values
//     give the confidence statement: with ≥ 5 runs a side, a bootstrap 95%
//     interval of the difference of the per-run medians (2000 resamples,
//     fixed seed); with fewer, whether the ranges of per-run values
//     overlap.
//
// Delta and ratio: Δ = B − A, in the metric's unit (percentage points for
// a fraction); ratio = B / A, absent when A is 0.
package compare

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/report"
)

// Comparison is the result of Compare: the folders, the settings that
// differ, and the metrics side by side, row by row.
type Comparison struct {
	Kind    string   `json:"kind"`
	Folders []Folder `json:"folders"`
	// Variables are the settings that differ; coverage and observation
	// differences, which confound nothing, last.
	Variables []Variable `json:"variables"`
	// Statement says in one sentence what the differing settings mean
	// for the comparison: the one variable, or the confounded ones.
	Statement  string  `json:"statement"`
	Confounded bool    `json:"confounded"`
	Groups     []Group `json:"rows"`
	// Repeats says some folder had repeated runs (a confidence statement
	// is possible).
	Repeats bool     `json:"repeats"`
	Notes   []string `json:"notes"`
	// Lead are tables shown before the settings in Markdown and HTML (the
	// what-if's table at a glance); compare.json has their values in rows.
	Lead []report.Grid `json:"-"`
}

// Group is one row every folder may have (a multiplier, a phase, a
// capacity step's rate, a sweep level) with its metrics side by side.
type Group struct {
	Key     string   `json:"key"`
	Metrics []Metric `json:"metrics"`
}

// Metric is one column of the rows: each folder's value.
type Metric struct {
	Column
	Sides []Side `json:"folders"`
}

// Side is one folder's value of a metric, and how it compares with the
// reference's (Delta, Ratio and Confidence are absent on the reference).
type Side struct {
	Cell
	NotTested bool `json:"not_tested,omitempty"`
	// Runs are the per-run values, with repeats; RunsAbove marks those
	// known only as a lower bound (the run's value is above it).
	Runs      []float64 `json:"runs,omitempty"`
	RunsAbove []bool    `json:"runs_lower_bound,omitempty"`
	// OfRuns says the value is not a pooled row's but the median of the
	// per-run values: a metric with one value per run (a recovery time,
	// one scaling event each) has no pooled value.
	OfRuns bool  `json:"median_of_runs,omitempty"`
	Delta  *Cell `json:"delta,omitempty"`
	Ratio  *Cell `json:"ratio,omitempty"`
	// Same compares a text value with the reference's.
	Same       *bool  `json:"same,omitempty"`
	Confidence string `json:"confidence,omitempty"`
}

// Folders loads the folders at paths and compares them, the first being
// the reference. Errors matching ErrInput are the user's: fewer than two
// folders, one that is not a folder surge wrote, folders of different
// kinds.
func Folders(paths []string) (*Comparison, error) {
	if len(paths) < 2 {
		return nil, inputErr("give at least two folders to compare, got %d", len(paths))
	}
	var fs []Folder
	var colSets [][]Column
	var seen []os.FileInfo
	for i, p := range paths {
		f, cols, err := Load(p)
		if err != nil {
			return nil, err
		}
		if st, err := os.Stat(p); err == nil {
			if j := slices.IndexFunc(seen, func(o os.FileInfo) bool { return os.SameFile(o, st) }); j >= 0 {
				return nil, inputErr("%s and %s are the same folder: a folder compared with itself shows no difference at all; give two different folders", paths[j], p)
			}
			seen = append(seen, st)
		}
		f.Label = label(i)
		fs = append(fs, *f)
		colSets = append(colSets, cols)
	}
	kinds := map[string]bool{}
	for _, f := range fs {
		kinds[f.Kind] = true
	}
	if len(kinds) > 1 {
		var each []string
		for _, f := range fs {
			each = append(each, fmt.Sprintf("%s is %s", f.Path, article(f.Kind)))
		}
		return nil, inputErr("the folders are of different kinds, and only folders of one kind compare: %s", strings.Join(each, "; "))
	}
	return compare(fs, colSets), nil
}

// article is a kind with its article: "a burst experiment", "one run of
// a burst experiment", "a surge run".
func article(kind string) string {
	if strings.HasPrefix(kind, "one ") {
		return kind
	}
	return "a " + kind
}

// label is the name of the i-th folder in tables: A, B, …, Z, F27, ….
func label(i int) string {
	if i < 26 {
		return string(rune('A' + i))
	}
	return fmt.Sprintf("F%d", i+1)
}

// compare sets the folders side by side: the settings that differ, and
// every row's metrics with their differences against the reference.
func compare(fs []Folder, colSets [][]Column) *Comparison {
	c := &Comparison{Kind: fs[0].Kind, Folders: fs}
	c.describeSettings(fs)
	cols := allColumns(colSets)
	keys, bySide, repeats := rowSides(fs, colSets)
	c.Repeats = repeats
	for _, key := range keys {
		g := Group{Key: key}
		for _, col := range cols {
			m := Metric{Column: col}
			for i := range fs {
				m.Sides = append(m.Sides, sideValue(bySide[i][key], col, key, fs[i].Label))
			}
			againstReference(col.Kind, m.Sides)
			g.Metrics = append(g.Metrics, m)
		}
		c.Groups = append(c.Groups, g)
	}
	if !c.Repeats {
		c.Notes = append(c.Notes, "every folder holds single runs: a difference carries no confidence statement (--repeat N on each side gives one)")
	}
	return c
}

// describeSettings sets the settings that differ between the folders, the
// statement of what they mean (warning first of a folder cut short), and a
// note for each folder that holds a partial run.
func (c *Comparison) describeSettings(fs []Folder) {
	var ms []*record.Manifest
	for _, f := range fs {
		ms = append(ms, f.Manifest)
	}
	c.Variables = Variables(ms)
	c.Statement, c.Confounded = statement(c.Variables, len(fs))
	if warn := partialWarning(fs); warn != "" {
		if !c.Confounded && len(c.Differing()) == 0 { // not run-to-run variation alone: the cut too
			c.Statement = "No setting of the target, its load or its judgement differs."
		}
		c.Statement = warn + c.Statement
	}
	c.Statement += coverageNote(c.Variables)
	for _, f := range fs {
		if f.Partial {
			c.Notes = append(c.Notes, fmt.Sprintf("%s (%s) holds a partial run: its values cover less than the plan", f.Label, f.Path))
		}
	}
}

// allColumns are the columns, in the reference's order, then any only
// others have.
func allColumns(colSets [][]Column) []Column {
	var cols []Column
	for _, cs := range colSets {
		for _, col := range cs {
			if !slices.ContainsFunc(cols, func(x Column) bool { return x.Key == col.Key }) {
				cols = append(cols, col)
			}
		}
	}
	return cols
}

// rowSide is one folder's rows of one key: its main (pooled) row, the
// per-run rows of repeats, and the columns the folder's results have.
type rowSide struct {
	main *Row
	runs []Row
	cols map[string]bool
}

// rowSides groups each folder's rows by key, with the keys in the
// reference's order, then any only others have; repeats says some folder
// has per-run rows.
func rowSides(fs []Folder, colSets [][]Column) (keys []string, bySide []map[string]*rowSide, repeats bool) {
	bySide = make([]map[string]*rowSide, len(fs))
	for i, f := range fs {
		bySide[i] = map[string]*rowSide{}
		colSet := map[string]bool{}
		for _, col := range colSets[i] {
			colSet[col.Key] = true
		}
		for j := range f.Rows {
			r := &f.Rows[j]
			s := bySide[i][r.Key]
			if s == nil {
				s = &rowSide{cols: colSet}
				bySide[i][r.Key] = s
				if !slices.Contains(keys, r.Key) {
					keys = append(keys, r.Key)
				}
			}
			switch {
			case r.Rep > 0 && !r.Pooled:
				s.runs = append(s.runs, *r)
				repeats = true
			case s.main == nil || r.Pooled:
				s.main = r
			}
		}
	}
	return keys, bySide, repeats
}

// sideValue is the value of column col in row key of the folder labelled
// folder, whose rows of that key are s (nil: it has none), with its per-run
// values; "not tested", with the reason, when it did not measure it.
func sideValue(s *rowSide, col Column, key, folder string) Side {
	var sd Side
	switch {
	case s == nil:
		sd = Side{Cell: Cell{Reason: fmt.Sprintf("no %s row in %s", key, folder)}, NotTested: true}
	case !s.cols[col.Key]:
		sd = Side{Cell: Cell{Reason: "not in " + folder + "'s results"}, NotTested: true}
	case s.main == nil:
		sd = Side{Cell: Cell{Reason: "no pooled row"}, NotTested: true}
	default:
		sd.Cell = s.main.Cells[col.Key]
		sd.NotTested = !sd.measured()
		if sd.NotTested && sd.Reason == "" {
			sd.Reason = "not measured"
		}
	}
	if s != nil && col.Kind != "text" {
		sd.Runs, sd.RunsAbove = runValues(s.runs, col.Key)
		if sd.NotTested && len(sd.Runs) > 0 && s.main != nil && !slices.Contains(sd.RunsAbove, true) {
			// One value per run and no pooled one: compare the runs' median.
			med := analyze.MedianOfRuns(sd.Runs)
			sd.Cell, sd.NotTested, sd.OfRuns = Cell{Value: &med}, false, true
		}
	}
	return sd
}

// againstReference compares every side of a metric of this kind with the
// first, the reference's: a text the same or not, a number by its
// difference, ratio and, with repeats, confidence.
func againstReference(kind string, sides []Side) {
	ref := sides[0]
	for i := 1; i < len(sides); i++ {
		sd := &sides[i]
		if kind == "text" {
			if !ref.NotTested && !sd.NotTested {
				same := ref.Text == sd.Text
				sd.Same = &same
			}
			continue
		}
		sd.Delta, sd.Ratio = deltaRatio(ref.Cell, sd.Cell)
		sd.Confidence = confidence(kind, runSet{ref.Runs, ref.RunsAbove}, runSet{sd.Runs, sd.RunsAbove})
	}
}

// runValues are the per-run values of key in runs (a lower bound marked
// above); nil when some run did not measure it.
func runValues(runs []Row, key string) (vals []float64, above []bool) {
	for _, r := range runs {
		c := r.Cells[key]
		switch {
		case c.Value != nil:
			vals, above = append(vals, *c.Value), append(above, false)
		case c.Lower != nil:
			vals, above = append(vals, *c.Lower), append(above, true)
		default:
			return nil, nil
		}
	}
	if !slices.Contains(above, true) {
		above = nil
	}
	return vals, above
}

// statement says what the differing settings mean for the comparison.
func statement(vs []Variable, n int) (string, bool) {
	var names []string
	for _, v := range vs {
		if v.confounds() {
			names = append(names, v.Name)
		}
	}
	switch len(names) {
	case 0:
		if len(vs) > 0 { // only what was run or observed differs: coverageNote names it
			return "No setting of the target, its load or its judgement differs: the differences below, in the rows both ran, are run-to-run variation.", false
		}
		return "No setting differs between the folders: the differences below are run-to-run variation.", false
	case 1:
		v := vs[slices.IndexFunc(vs, func(v Variable) bool { return v.Name == names[0] })]
		return fmt.Sprintf("One variable differs: %s (%s). The differences below are its effect.", v.Name, strings.Join(v.Values, " → ")), false
	}
	return fmt.Sprintf("WARNING: %d variables differ (%s): the comparison confounds them — no difference below can be attributed to any one of them. Change one variable at a time.", len(names), strings.Join(names, ", ")), true
}

// partialWarning is the headline's first sentence when a folder holds a
// partial run: its values cover less than the plan (a budget stop, a
// Ctrl-C), so a difference may be the cut's rather than a setting's.
func partialWarning(fs []Folder) string {
	var each []string
	for _, f := range fs {
		if f.Partial {
			why := ""
			if f.PartialWhy != "" {
				why = " (" + f.PartialWhy + ")"
			}
			each = append(each, fmt.Sprintf("%s holds a partial run%s", f.Label, why))
		}
	}
	if len(each) == 0 {
		return ""
	}
	return "WARNING: " + strings.Join(each, "; ") + ": its values cover less than the plan, so a difference below may be the cut's, not a setting's. "
}

// coverageNote names the differences in what was run (multipliers,
// levels, repeats, a budget) and observed, which the statement's
// variables leave out: they confound nothing, but they are not nothing.
func coverageNote(vs []Variable) string {
	var run, budget, seen []string
	for _, v := range vs {
		d := fmt.Sprintf("%s (%s)", v.Name, strings.Join(v.Values, " → "))
		switch {
		case v.Observation:
			seen = append(seen, d)
		case v.Category == "budget":
			budget = append(budget, d)
		case v.Coverage:
			run = append(run, d)
		}
	}
	var out []string
	if len(run) > 0 {
		out = append(out, "What was run differs: "+strings.Join(run, ", ")+" — a row only one folder ran is not tested on the other; more repeats only sharpen the confidence statement.")
	}
	if len(budget) > 0 {
		out = append(out, "The budget differs: "+strings.Join(budget, ", ")+" — a run it stopped is partial.")
	}
	if len(seen) > 0 {
		out = append(out, "What was observed differs: "+strings.Join(seen, ", ")+" — it changes which metrics are tested, not their values.")
	}
	if len(out) == 0 {
		return ""
	}
	return " " + strings.Join(out, " ")
}

// deltaRatio is B − A and B / A, each a value, a bound, or nil when
// neither is known (a side not tested, both sides only bounded).
func deltaRatio(a, b Cell) (delta, ratio *Cell) {
	av, al, au := a.Value, a.Lower, a.Upper
	bv, bl, bu := b.Value, b.Lower, b.Upper
	p := func(v float64) *float64 { return &v }
	switch {
	case av != nil && bv != nil:
		delta = &Cell{Value: p(*bv - *av)}
		if *av != 0 {
			ratio = &Cell{Value: p(*bv / *av)}
		}
	case av != nil && bl != nil: // B > bl
		delta = &Cell{Lower: p(*bl - *av)}
		if *av > 0 {
			ratio = &Cell{Lower: p(*bl / *av)}
		}
	case av != nil && bu != nil: // B ≤ bu
		delta = &Cell{Upper: p(*bu - *av)}
		if *av > 0 {
			ratio = &Cell{Upper: p(*bu / *av)}
		}
	case al != nil && bv != nil: // A > al
		delta = &Cell{Upper: p(*bv - *al)}
		if *al > 0 && *bv >= 0 {
			ratio = &Cell{Upper: p(*bv / *al)}
		}
	case au != nil && bv != nil: // A ≤ au
		delta = &Cell{Lower: p(*bv - *au)}
		if *au > 0 && *bv >= 0 {
			ratio = &Cell{Lower: p(*bv / *au)}
		}
	}
	if ratio != nil {
		for _, x := range []*float64{ratio.Value, ratio.Lower, ratio.Upper} {
			if x != nil && (math.IsInf(*x, 0) || math.IsNaN(*x)) {
				ratio = nil
				break
			}
		}
	}
	return delta, ratio
}

// Variable returns the variable named name, if it differs.
func (c *Comparison) Variable(name string) (Variable, bool) {
	i := slices.IndexFunc(c.Variables, func(v Variable) bool { return v.Name == name })
	if i < 0 {
		return Variable{}, false
	}
	return c.Variables[i], true
}

// Value returns folder i's value of the metric key in the row key, and
// whether it was tested.
func (c *Comparison) Value(row, key string, i int) (Side, bool) {
	for _, g := range c.Groups {
		if g.Key != row {
			continue
		}
		for _, m := range g.Metrics {
			if m.Key == key && i < len(m.Sides) {
				return m.Sides[i], !m.Sides[i].NotTested
			}
		}
	}
	return Side{}, false
}

// Differing names the variables that differ (coverage aside).
func (c *Comparison) Differing() []string {
	var out []string
	for _, v := range c.Variables {
		if v.confounds() {
			out = append(out, v.Name)
		}
	}
	return out
}
