package report

import (
	"fmt"
	"strconv"
	"strings"
)

// Repeated runs (--repeat N, a multiplier listed twice) put one row per run
// in the table, then the pooled row, and a Spread line per metric below
// the rows. A table without repeats renders exactly as before: the rep
// column, the CSV and JSON repeat fields and the spread section appear
// only when some row is repeated (Row.Repeats > 0).

// repColumn is the people's column that names a row's run among repeats:
// 1 … N, or "pooled".
var repColumn = rowColumn{Column{Key: "rep", Head: "rep", Group: groupID, Kind: KindText, Desc: "the run among repeated runs of one configuration; pooled: their raw observations merged (never averaged percentiles)"}, func(r *Row) Cell {
	switch {
	case r.Pooled:
		return fixedCell(formatted{text: "pooled", raw: "0", json: 0})
	case r.Repeats > 0:
		s := strconv.Itoa(r.Rep)
		return fixedCell(formatted{text: s, raw: s, json: r.Rep})
	}
	return fixedCell(formatted{text: "—", raw: "", json: nil})
}}

// repeated reports whether any row belongs to repeated runs.
func (t *Table) repeated() bool {
	return t.any(func(r *Row) bool { return r.Repeats > 0 })
}

// repeatFields is what a row of a repeated experiment adds to results.json:
// "rep": k on a run's row; "rep": 0, "pooled": true, "repeats": N on the
// pooled row; nothing on a row that was not repeated.
func repeatFields(r *Row) string {
	switch {
	case r.Pooled:
		return fmt.Sprintf(`,"rep":0,"pooled":true,"repeats":%d`, r.Repeats)
	case r.Repeats > 0:
		return fmt.Sprintf(`,"rep":%d`, r.Rep)
	}
	return ""
}

// repeatCSVHeader is the columns results.csv adds when some row is
// repeated: rep (0 on the pooled row, empty on a row not repeated),
// pooled and repeats.
var repeatCSVHeader = []string{"rep", "pooled", "repeats"}

func repeatCSV(r *Row) []string {
	if r.Repeats == 0 {
		return []string{"", "false", ""}
	}
	return []string{strconv.Itoa(r.Rep), strconv.FormatBool(r.Pooled), strconv.Itoa(r.Repeats)}
}

// Spread is how one metric varied over the repeated runs of one
// configuration: each run's value in run order (a lower bound where the
// run's own cell is one), their minimum, median and maximum, and a
// bootstrap interval of the median (n/a with its reason below 5 runs or
// with lower bounds among the values). The statistics are computed by the
// caller (analyze.SpreadOf); this is how they are shown.
type Spread struct {
	Scope  string `json:"scope"`  // the configuration, e.g. "5×" or "main"
	Metric string `json:"metric"` // the column key, e.g. ttft_p99_ms, recovery_s
	Values []Opt  `json:"values"` // per run, rep 1 first
	Min    Opt    `json:"min"`
	Median Opt    `json:"median"` // nearest rank: ⌈N/2⌉-th smallest
	Max    Opt    `json:"max"`
	CILow  Opt    `json:"ci_low"`
	CIHigh Opt    `json:"ci_high"`
	// CILevel is the interval's confidence level (0.95); Resamples how
	// many bootstrap resamples it was drawn from; both 0 without one.
	CILevel   float64 `json:"ci_level,omitempty"`
	Resamples int     `json:"resamples,omitempty"`
}

// spreadKind is the unit a spread's metric is shown in, from its column.
func spreadKind(metric string) (head string, kind Kind) {
	if metric == "sustainable_rps" { // a capacity search's result, not a column
		return "sustainable rate", KindRPS
	}
	for i := range columns {
		if columns[i].Key == metric {
			return columns[i].Head, columns[i].Kind
		}
	}
	return metric, KindText
}

// Text is the spread as one line for people, e.g. "5× TTFT p99 (ms): runs
// 812, 905, 1,020; min 812, median 905, max 1,020; no interval (fewer than
// 5 runs)".
func (s Spread) Text() string {
	head, kind := spreadKind(s.Metric)
	f := func(o Opt) string {
		valid, censored := o.state()
		switch {
		case valid:
			return fmtKind(kind, o.V)
		case censored:
			return "> " + fmtKind(kind, o.V)
		}
		return NA
	}
	unit := map[Kind]string{KindMs: " (ms)", KindSeconds: " (s)", KindRPS: " (req/s)", KindRatio: " (%)"}[kind]
	vals := make([]string, len(s.Values))
	for i, v := range s.Values {
		vals[i] = f(v)
	}
	line := fmt.Sprintf("%s %s%s: runs %s; min %s, median %s, max %s", s.Scope, head, unit, strings.Join(vals, ", "), f(s.Min), f(s.Median), f(s.Max))
	if v, _ := s.CILow.state(); v {
		return line + fmt.Sprintf("; %.0f%% bootstrap interval of the median %s – %s (%d resamples)", 100*s.CILevel, f(s.CILow), f(s.CIHigh), s.Resamples)
	}
	return line + "; no bootstrap interval (" + orUnknown(s.CILow.reason()) + ")"
}

// spreadHeading introduces the spread lines in Markdown and HTML.
const spreadHeading = "Spread over repeats"

// spreadIntro says how to read them.
const spreadIntro = "Each run's own value, then min/median/max over the runs (median: the ⌈N/2⌉-th smallest, a value one run measured) and, from 5 runs on, a 95% percentile-bootstrap interval of the median. The pooled row above merges the runs' raw observations; it is never an average of their percentiles."
