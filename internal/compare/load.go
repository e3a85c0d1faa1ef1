package compare

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/report"
	"github.com/surge-bench/surge/internal/rundir"
)

// The kinds of folder Compare reads. A lone run folder of an experiment
// is its own kind ("one run of a burst experiment"): its rows are its
// phases, not the experiment's multipliers or levels.
const (
	KindRun      = "surge run"
	KindBurst    = "burst experiment"
	KindCapacity = "capacity search"
	KindSweep    = "sweep"
	KindSoak     = "soak"
)

// Folder is one folder as Compare read it.
type Folder struct {
	Path string `json:"path"`
	// Label names the folder in tables: "A", "B", … .
	Label string `json:"label"`
	Kind  string `json:"kind"`
	// Manifest is the manifest of the folder's first run (every run of an
	// experiment is configured alike but for its multiplier or level).
	Manifest *record.Manifest `json:"-"`
	// ManifestPath is the file it came from.
	ManifestPath string `json:"manifest"`
	// Rows are the result rows, in the folder's order.
	Rows []Row `json:"-"`
	// Partial says some run of the folder was cut short (its manifest),
	// and PartialWhy why (the first such run's reason).
	Partial    bool   `json:"partial"`
	PartialWhy string `json:"partial_why,omitempty"`
}

// Row is one results row: its identity (the multiplier, phase, step
// rate, level, workload) and its cells by column key. Rep is the repeat
// it is one run of (1..N), 0 for an unrepeated row or the pooled one.
type Row struct {
	Key, Label string
	Rep        int
	Pooled     bool
	Cells      map[string]Cell
}

// Cell is one value of a row: a number (Value), a censored number (a
// Lower or Upper bound only), text, or nothing measured (NA, with the
// reason the folder gave).
type Cell struct {
	Value  *float64 `json:"value,omitempty"`
	Lower  *float64 `json:"lower_bound,omitempty"`
	Upper  *float64 `json:"upper_bound,omitempty"`
	Text   string   `json:"text,omitempty"`
	Reason string   `json:"reason,omitempty"`
}

// measured reports whether c holds anything: a value, a bound or text.
func (c Cell) measured() bool {
	return c.Value != nil || c.Lower != nil || c.Upper != nil || c.Text != ""
}

// Column is one metric column: its key, its head for people and how its
// values are formatted.
type Column struct {
	Key  string `json:"key"`
	Head string `json:"head"`
	Kind string `json:"kind"` // text, number, rate, ms, ratio, count, seconds
}

// ErrInput marks input Compare cannot compare: fewer than two folders, a
// folder that is not one surge wrote, folders of different kinds.
var ErrInput = errors.New("compare: bad input")

// inputError is an error of the user's input; it matches ErrInput.
type inputError struct{ msg string }

func (e *inputError) Error() string        { return "compare: " + e.msg }
func (e *inputError) Is(target error) bool { return target == ErrInput }

func inputErr(format string, a ...any) error {
	return &inputError{fmt.Sprintf(format, a...)}
}

// Load reads the folder at path: its kind, its first run's manifest and
// its result rows (results.json; a lone run folder without one, its
// summary.json's phases).
func Load(path string) (*Folder, []Column, error) {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil, inputErr("%s: no such folder", path)
	case err != nil:
		return nil, nil, inputErr("%s: %v", path, err)
	case !st.IsDir():
		return nil, nil, inputErr("%s: not a folder (give the folder a surge command wrote)", path)
	}
	f := &Folder{Path: path}
	var runs []string
	switch {
	case rundir.IsRun(path):
		runs = []string{path}
	case has(path, "burst-*x"):
		f.Kind = KindBurst
		runs = runFolders(path, "burst-*x")
	case has(path, "step-*"):
		f.Kind = KindCapacity
		runs = runFolders(path, "step-*")
	case has(path, "level-*"):
		f.Kind = KindSweep
		runs = runFolders(path, "level-*")
	case has(path, "rep-*"): // surge run --repeat N: rep-1/ … rep-N/ and the pooled results
		runs = runFolders(path, "rep-*")
		if len(runs) == 0 { // capacity --repeat N: each rep-k a whole search
			reps, _ := rundir.Folders(path, "rep-*")
			if sub, _, err := Load(reps[0]); err == nil {
				f.Kind = sub.Kind
				runs = []string{filepath.Dir(sub.ManifestPath)}
			}
		}
	}
	if len(runs) == 0 {
		return nil, nil, inputErr("%s is not a folder surge wrote: no manifest.json, requests.jsonl or results.json, and no burst-<k>x, step-*, level-* or rep-* run folders in it", path)
	}
	for _, r := range runs {
		m, err := record.ReadManifest(filepath.Join(r, "manifest.json"))
		if err != nil {
			continue
		}
		if f.Manifest == nil {
			f.Manifest, f.ManifestPath = m, filepath.Join(r, "manifest.json")
		}
		if m.Partial && !f.Partial {
			f.PartialWhy = m.PartialWhy
		}
		f.Partial = f.Partial || m.Partial
	}
	if f.Manifest == nil {
		return nil, nil, inputErr("%s: no readable manifest.json in its runs: what was tested is unknown, so nothing can be compared", path)
	}
	if f.Kind == "" {
		f.Kind = runKind(path, f.Manifest.Command)
	}
	var cols []Column
	if exists(filepath.Join(path, "results.json")) {
		cols, f.Rows, err = readResults(filepath.Join(path, "results.json"), f.Kind)
	} else if rundir.IsRun(path) {
		cols, f.Rows, err = readSummary(filepath.Join(path, "summary.json"))
	} else {
		err = fmt.Errorf("no results.json")
	}
	if err != nil {
		return nil, nil, inputErr("%s: %v", path, err)
	}
	if row, rcols := searchRow(path, f.Kind); row != nil {
		f.Rows = append([]Row{*row}, f.Rows...)
		cols = append(rcols, cols...)
		if f.Kind == KindCapacity {
			f.Rows = append(f.Rows, sustainableStep(f.Rows, row)...)
		}
	} else if rows, rcols := repeatedSearchRows(path, f.Kind); rows != nil {
		f.Rows = append(rows, f.Rows...)
		cols = append(rcols, cols...)
	}
	return f, cols, nil
}

// repeatedSearchRows are the search outcome of capacity --repeat N (or a
// sweep's): one row per search, from rep-k's capacity.json, as the runs
// of a "search outcome" row whose value is their median — so a repeated
// search lines up with a single one (review 14, finding 8). Nil when path
// holds no repeated searches.
func repeatedSearchRows(path, kind string) ([]Row, []Column) {
	if kind != KindCapacity && kind != KindSweep || !has(path, "rep-*") {
		return nil, nil
	}
	reps, _ := rundir.Folders(path, "rep-*")
	var rows []Row
	var cols []Column
	for _, rp := range reps {
		k, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(rp), "rep-"))
		if err != nil {
			continue
		}
		row, rcols := searchRow(rp, kind)
		if row == nil {
			continue
		}
		row.Rep, cols = k, rcols
		rows = append(rows, *row)
	}
	if len(rows) == 0 {
		return nil, nil
	}
	main := Row{Key: "search outcome", Label: "search outcome", Cells: map[string]Cell{}}
	for _, c := range cols {
		main.Cells[c.Key] = Cell{Reason: "one value per search: the median of the searches"}
	}
	return append([]Row{main}, rows...), cols
}

// sustainableStep is a single capacity search's sustainable step again,
// as the "sustainable step" row a repeated search's results have (each
// search's sustainable step, and their pooled row), so the two line up.
// None when no step was sustainable.
func sustainableStep(rows []Row, outcome *Row) []Row {
	v := outcome.Cells["sustainable_rps"].Value
	if v == nil {
		return nil
	}
	key := fmtNum(*v) + " req/s"
	for _, r := range rows {
		if r.Key == key {
			r.Key, r.Label = "sustainable step", "sustainable step ("+key+")"
			return []Row{r}
		}
	}
	return nil
}

// searchRow is the outcome of a capacity search (capacity.json: the
// sustainable rate, the lowest failing one, the suggested baseline) or a
// sweep (sweep.json: the usable level, the knee, the budget break), as
// one row before the steps' or levels', or nil for other kinds.
func searchRow(path, kind string) (*Row, []Column) {
	var file string
	switch kind {
	case KindCapacity:
		file = "capacity.json"
	case KindSweep:
		file = "sweep.json"
	default:
		return nil, nil
	}
	b, err := os.ReadFile(filepath.Join(path, file))
	if err != nil {
		return nil, nil
	}
	r := &Row{Key: "search outcome", Label: "search outcome", Cells: map[string]Cell{}}
	var cols []Column
	if kind == KindCapacity {
		var c map[string]json.RawMessage
		if json.Unmarshal(b, &c) != nil {
			return nil, nil
		}
		for _, k := range []string{"sustainable_rps", "lowest_failing_rps", "suggested_baseline_rps"} {
			r.Cells[k] = parseCell(c[k])
			if v := r.Cells[k].Value; v != nil && *v == 0 {
				r.Cells[k] = Cell{Reason: "none found"}
			}
			cols = append(cols, Column{Key: k, Head: strings.ReplaceAll(k, "_", " "), Kind: "rate"})
		}
		return r, cols
	}
	var sw struct {
		Levels []struct {
			Level float64 `json:"level"`
		} `json:"levels"`
		Findings map[string]json.RawMessage `json:"findings"`
	}
	if json.Unmarshal(b, &sw) != nil {
		return nil, nil
	}
	for _, k := range []string{"usable", "knee", "break"} {
		var i int
		key := k + "_level"
		cols = append(cols, Column{Key: key, Head: k + " level", Kind: "number"})
		if json.Unmarshal(sw.Findings[k], &i) != nil || i < 0 || i >= len(sw.Levels) {
			r.Cells[key] = Cell{Reason: k + " not reached"}
			continue
		}
		v := sw.Levels[i].Level
		r.Cells[key] = Cell{Value: &v}
	}
	return r, cols
}

// runKind is the kind of a folder whose runs are of command: a surge run
// (or its repeats), a soak, or one run of an experiment.
func runKind(path, command string) string {
	switch command {
	case "run", "":
		return KindRun
	case "soak":
		return KindSoak
	case "burst":
		return "one run of a burst experiment"
	case "capacity":
		return "one step of a capacity search"
	case "sweep":
		return "one level of a sweep"
	}
	return "one run of surge " + command
}

// has reports whether path holds a folder matching pattern.
func has(path, pattern string) bool {
	subs, err := rundir.Folders(path, pattern)
	return err == nil && len(subs) > 0
}

// runFolders returns the run folders under the folders of path matching
// pattern, one level down where a folder holds repeats (burst-5x/rep-1/).
func runFolders(path, pattern string) []string {
	subs, _ := rundir.Folders(path, pattern)
	var out []string
	for _, s := range subs {
		if exists(filepath.Join(s, "manifest.json")) {
			out = append(out, s)
			continue
		}
		reps, _ := rundir.Folders(s, "rep-*")
		for _, r := range reps {
			if exists(filepath.Join(r, "manifest.json")) {
				out = append(out, r)
			}
		}
	}
	return out
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// identity are the columns that say which row a row is, never metrics.
var identity = []string{"model", "workload", "phase", "deployment", "multiplier", "step", "level", "window_start_s", "window_end_s", "rep", "pooled", "repeats"}

// readResults reads a results.json: the results table (run, burst, soak:
// rows of {"value": …} objects) or a level table (capacity, sweep: a
// columns list and plain numbers).
func readResults(path, kind string) ([]Column, []Row, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	var doc struct {
		Columns []Column                     `json:"columns"`
		Rows    []map[string]json.RawMessage `json:"rows"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, nil, fmt.Errorf("results.json: %v", err)
	}
	// The order of the columns: the level table lists them, the results
	// table's rows have them in order.
	cols := doc.Columns
	if len(cols) == 0 && len(doc.Rows) > 0 {
		keys, err := orderedKeys(b)
		if err != nil {
			return nil, nil, fmt.Errorf("results.json: %v", err)
		}
		for _, k := range keys {
			head, ok := report.ColumnHead(k)
			if !ok {
				head = k
			}
			cols = append(cols, Column{Key: k, Head: head, Kind: kindOf(k)})
		}
	}
	cols = slices.DeleteFunc(cols, func(c Column) bool { return slices.Contains(identity, c.Key) })
	for i := range cols {
		if cols[i].Head == "" { // a column for CSV and JSON only (slo_ttft_p95)
			cols[i].Head = cols[i].Key
		}
	}
	var rows []Row
	for _, raw := range doc.Rows {
		r := Row{Cells: map[string]Cell{}}
		for k, v := range raw {
			r.Cells[k] = parseCell(v)
		}
		r.Rep = int(num(r.Cells["rep"]))
		r.Pooled = r.Cells["pooled"].Text == "yes"
		r.Key, r.Label = rowIdentity(kind, r.Cells)
		if _, rep := r.Cells["rep"]; rep && kind == KindCapacity {
			// capacity --repeat N: each search's sustainable step, and their
			// pooled row — one row per search, whichever step it was.
			r.Key, r.Label = "sustainable step", "sustainable step"
		}
		for _, k := range identity {
			delete(r.Cells, k)
		}
		rows = append(rows, r)
	}
	return cols, rows, nil
}

// rowIdentity is the key and label of a row: what makes it the same row
// in another folder — the multiplier, phase and workload of a results
// row, the planned rate of a capacity step (step names count steps), the
// level of a sweep.
func rowIdentity(kind string, c map[string]Cell) (key, label string) {
	var parts []string
	if m := c["multiplier"]; m.Value != nil {
		parts = append(parts, fmtNum(*m.Value)+"×")
	}
	if kind == KindCapacity {
		if r := c["rate_rps"]; r.Value != nil {
			parts = append(parts, fmtNum(*r.Value)+" req/s")
		}
	}
	if kind == KindSoak {
		if a, b := c["window_start_s"], c["window_end_s"]; a.Value != nil && b.Value != nil {
			parts = append(parts, "window "+fmtNum(*a.Value)+"–"+fmtNum(*b.Value)+" s")
		}
	}
	for _, k := range []string{"level", "phase"} {
		if t := c[k].Text; t != "" {
			parts = append(parts, t)
		}
	}
	if w := c["workload"].Text; w != "" && kind != KindBurst && kind != KindRun {
		parts = append(parts, w)
	}
	label = strings.Join(parts, " ")
	if label == "" {
		label = "whole run"
	}
	return label, label
}

// orderedKeys returns the keys of the first row of a results.json, in
// the file's order.
func orderedKeys(b []byte) ([]string, error) {
	var doc struct {
		Rows []json.RawMessage `json:"rows"`
	}
	if err := json.Unmarshal(b, &doc); err != nil || len(doc.Rows) == 0 {
		return nil, err
	}
	dec := json.NewDecoder(strings.NewReader(string(doc.Rows[0])))
	if _, err := dec.Token(); err != nil { // {
		return nil, err
	}
	var keys []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		keys = append(keys, t.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

// parseCell reads one JSON value of a row.
func parseCell(raw json.RawMessage) Cell {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return Cell{}
	}
	switch x := v.(type) {
	case float64:
		return Cell{Value: &x}
	case string:
		return Cell{Text: x}
	case bool:
		if x {
			return Cell{Text: "yes"}
		}
		return Cell{Text: "no"}
	case map[string]any:
		var c Cell
		if f, ok := x["value"].(float64); ok {
			c.Value = &f
		}
		if f, ok := x["lower_bound"].(float64); ok {
			c.Lower = &f
		}
		if f, ok := x["upper_bound"].(float64); ok {
			c.Upper = &f
		}
		c.Reason, _ = x["reason"].(string)
		if s, _ := x["status"].(string); s == "never" {
			c.Text = "never" // a backlog that never drains: no number, but measured
		}
		return c
	}
	return Cell{}
}

func num(c Cell) float64 {
	if c.Value == nil {
		return 0
	}
	return *c.Value
}

// kindOf guesses how a results-table column is formatted from its key.
func kindOf(key string) string {
	switch {
	case strings.HasPrefix(key, "slo_"), key == "mu_source", key == "partial", key == "partial_reason", key == "recovery_late", key == "verdict", key == "note", key == "budget", key == "marks":
		return "text"
	case strings.HasSuffix(key, "_ms"):
		return "ms"
	case strings.HasSuffix(key, "_rps"), strings.HasSuffix(key, "_per_s"):
		return "rate"
	case strings.HasSuffix(key, "_ratio"), strings.HasSuffix(key, "_rate"):
		return "ratio"
	case strings.HasSuffix(key, "_s"):
		return "seconds"
	case key == "samples":
		return "count"
	case key == "attempts_per_arrival":
		return "number"
	}
	return "number"
}

// readSummary makes rows of a lone run folder's summary.json: one per
// measured phase, with its rates, failure rates and latency percentiles
// (a censored percentile as its lower bound), and the recovery of a
// burst run.
func readSummary(path string) ([]Column, []Row, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("no results.json, and summary.json: %v", errors.Unwrap(err))
	}
	var s struct {
		Analysis struct {
			Phases   []map[string]json.RawMessage `json:"phases"`
			Recovery *struct {
				Judged         bool    `json:"judged"`
				Recovered      bool    `json:"recovered"`
				RecoveryTimeMs float64 `json:"recovery_time_ms"`
				ObservedMs     float64 `json:"observed_ms"`
			} `json:"recovery"`
		} `json:"analysis"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, nil, fmt.Errorf("summary.json: %v", err)
	}
	rates := []string{"offered_rps", "sent_rps", "completed_rps", "goodput_rps", "goodput_ratio", "arrivals_ok_ratio", "error_rate", "rate_limit_rate", "timeout_rate", "drop_rate", "failure_rate", "output_tokens_per_s"}
	lat := []struct{ key, head string }{{"ttft_schedule", "ttft"}, {"e2e_schedule", "completion"}, {"tpot", "tpot"}}
	var cols []Column
	col := func(k, kind string) Column {
		head, ok := report.ColumnHead(k)
		if !ok {
			head = strings.ReplaceAll(strings.TrimSuffix(k, "_ms"), "_", " ")
		}
		return Column{Key: k, Head: head, Kind: kind}
	}
	for _, k := range rates {
		cols = append(cols, col(k, kindOf(k)))
	}
	for _, l := range lat {
		for _, q := range []string{"p50", "p95", "p99"} {
			cols = append(cols, col(l.head+"_"+q+"_ms", "ms"))
		}
	}
	cols = append(cols, col("recovery_s", "seconds"), col("samples", "count"))
	var rows []Row
	for _, ph := range s.Analysis.Phases {
		var excluded bool
		var name string
		json.Unmarshal(ph["excluded"], &excluded)
		json.Unmarshal(ph["name"], &name)
		if excluded {
			continue
		}
		r := Row{Key: name, Label: name, Cells: map[string]Cell{}}
		for _, k := range rates {
			r.Cells[k] = parseCell(ph[k])
		}
		var latency map[string]map[string]any
		json.Unmarshal(ph["latency"], &latency)
		for _, l := range lat {
			d := latency[l.key]
			for _, q := range []string{"p50", "p95", "p99"} {
				k := l.head + "_" + q + "_ms"
				v, ok := d[q+"_ms"].(float64)
				cnt, _ := d["count"].(float64)
				switch {
				case !ok || cnt == 0:
					r.Cells[k] = Cell{Reason: "no samples"}
				case d[q+"_censored"] == true:
					r.Cells[k] = Cell{Lower: &v, Reason: "more than the percentile's share of requests timed out"}
				default:
					r.Cells[k] = Cell{Value: &v}
				}
			}
		}
		if c := parseCell(ph["offered"]); c.Value != nil {
			r.Cells["samples"] = c
		}
		if rec := s.Analysis.Recovery; rec != nil && rec.Judged && name == "recovery" {
			sec := rec.RecoveryTimeMs / 1000
			if rec.Recovered {
				r.Cells["recovery_s"] = Cell{Value: &sec}
			} else {
				obs := rec.ObservedMs / 1000
				r.Cells["recovery_s"] = Cell{Lower: &obs, Reason: "did not recover within the observed time"}
			}
		}
		rows = append(rows, r)
	}
	return cols, rows, nil
}

// fmtNum prints a number briefly: 5, 2.5, 0.125.
func fmtNum(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}
