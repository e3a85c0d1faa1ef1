package coldstart

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/surge-bench/surge/internal/report"

	"github.com/surge-bench/surge/internal/analyze"
)

// Report is coldstart.json: the cycles and the distribution of each
// milestone. Times are seconds (TTFTs too); a milestone not reached is
// absent (null).
type Report struct {
	Mode     string    `json:"mode"` // ModeStartCmd or ModeScaleFromZero
	Target   string    `json:"target"`
	Model    string    `json:"model"`
	StartCmd string    `json:"start_cmd,omitempty"`
	Version  string    `json:"surge_version,omitempty"`
	Started  time.Time `json:"started"`
	Rule     WarmRule  `json:"warm_rule"`
	Cycles   []Cycle   `json:"cycles"`
	Summary  []Spread  `json:"summary"`
	Log      string    `json:"log,omitempty"` // the started server's output, in the run folder
	// Interrupted: Ctrl-C stopped the measurement; the cycles are those
	// measured until then (the last one possibly incomplete).
	Interrupted bool `json:"interrupted,omitempty"`
	// Problem is the error that ended the measurement early, if any.
	Problem string `json:"problem,omitempty"`
	// Note is a caveat about the target the command found before it
	// measured (e.g. a simulator not scaled from zero).
	Note     string `json:"note,omitempty"`
	ExitCode int    `json:"exit_code"`
}

// WarmRule is the rule that decided "warm" (package doc).
type WarmRule struct {
	Window    int     `json:"window"`    // K consecutive TTFTs
	Tolerance float64 `json:"tolerance"` // X: within X × their median…
	FloorMs   float64 `json:"floor_ms"`  // …or within this many ms of it
	Max       int     `json:"max"`       // requests after the first success, at most
}

// Cycle is one cold start.
type Cycle struct {
	N       int       `json:"cycle"`
	Started time.Time `json:"started"`
	// ListenS: t0 → the first accepted TCP connection (start command only).
	ListenS *float64 `json:"listen_s,omitempty"`
	// FirstTokenS: t0 → the first token of the first successful request.
	FirstTokenS *float64 `json:"first_token_s,omitempty"`
	// ColdTTFTS: that request's own TTFT (sent → first token).
	ColdTTFTS *float64 `json:"cold_ttft_s,omitempty"`
	// Probes: requests sent until the first success, it included;
	// ProbeFailures counts the failed ones by how they failed.
	Probes        int            `json:"probes"`
	ProbeFailures map[string]int `json:"probe_failures"`
	// WarmS: t0 → the send time of the first request of the first steady
	// window; WarmTTFTS: that window's median TTFT.
	WarmS        *float64 `json:"warm_s,omitempty"`
	WarmTTFTS    *float64 `json:"warm_ttft_s,omitempty"`
	WarmRequests int      `json:"warm_requests"` // sent after the first success
	WarmFailures int      `json:"warm_failures"` // of them, failed
	// WarmStart: scale from zero only — the first token came within twice
	// the warm TTFT, so the endpoint had not scaled to zero.
	WarmStart bool `json:"warm_start,omitempty"`
	// StopS: SIGTERM → the port refused connections; Killed: SIGKILL was
	// needed after the grace; Exit: how sh ended.
	StopS  *float64 `json:"stop_s,omitempty"`
	Killed bool     `json:"killed,omitempty"`
	Exit   string   `json:"exit,omitempty"`
	// Problem is why the cycle ended early (the start command exited, no
	// token within the start timeout).
	Problem string `json:"problem,omitempty"`
}

// Spread is one milestone over the cycles that reached it.
type Spread struct {
	Milestone string  `json:"milestone"` // "listen", "first_token", …
	N         int     `json:"n"`         // cycles that reached it
	Min       float64 `json:"min_s"`
	Median    float64 `json:"median_s"`
	Max       float64 `json:"max_s"`
}

// milestone is a reported milestone and a cycle's value of it.
type milestone struct {
	name, title string
	kind        report.Kind // KindDuration, or KindMs for a TTFT
	desc        string
	get         func(*Cycle) *float64
}

// milestones lists the reported milestones.
var milestones = []milestone{
	{"listen", "listen", report.KindDuration, "t0 → first accepted TCP connection", func(c *Cycle) *float64 { return c.ListenS }},
	{"first_token", "first token", report.KindDuration, "t0 → first token of the first successful request", func(c *Cycle) *float64 { return c.FirstTokenS }},
	{"cold_ttft", "cold TTFT", report.KindMs, "that request's own TTFT (sent → first token)", func(c *Cycle) *float64 { return c.ColdTTFTS }},
	{"warm", "warm", report.KindDuration, "t0 → the first request of the first steady window", func(c *Cycle) *float64 { return c.WarmS }},
	{"warm_ttft", "warm TTFT", report.KindMs, "that window's median TTFT", func(c *Cycle) *float64 { return c.WarmTTFTS }},
	{"stop", "stop", report.KindDuration, "SIGTERM → port closed", func(c *Cycle) *float64 { return c.StopS }},
}

// cell is the milestone's value in a cycle, n/a with the reason when it
// was not reached.
func (ms milestone) cell(c *Cycle) report.Cell {
	v := ms.get(c)
	if v == nil {
		return report.NumCell(report.Unavailable("not reached"))
	}
	return ms.value(*v)
}

// value is a value of the milestone (seconds) in its column's unit.
func (ms milestone) value(v float64) report.Cell {
	if ms.kind == report.KindMs {
		v *= 1000
	}
	return report.NumCell(report.Val(v))
}

// summarize is the spread of each milestone some cycle reached. Warm
// starts (scale from zero) are left out: they measured no cold start.
func summarize(r *Report) []Spread {
	var out []Spread
	for _, ms := range milestones {
		var vs []float64
		for i := range r.Cycles {
			if v := ms.get(&r.Cycles[i]); v != nil && !r.Cycles[i].WarmStart {
				vs = append(vs, *v)
			}
		}
		if len(vs) == 0 {
			continue
		}
		out = append(out, Spread{ms.name, len(vs), slices.Min(vs), analyze.MedianOfRuns(vs), slices.Max(vs)})
	}
	return out
}

// AllWarmStarts reports whether cycles were measured and each was a warm
// start: no cold start was measured at all.
func (r *Report) AllWarmStarts() bool {
	for _, c := range r.Cycles {
		if !c.WarmStart {
			return false
		}
	}
	return len(r.Cycles) > 0
}

// line is the console line of a finished cycle.
func (c *Cycle) line() string {
	var b strings.Builder
	fmt.Fprintf(&b, "cycle %d:", c.N)
	if c.Problem != "" && c.FirstTokenS == nil {
		fmt.Fprintf(&b, " %s", c.Problem)
		return b.String()
	}
	if c.ListenS != nil {
		fmt.Fprintf(&b, " listen %s,", fmtS(c.ListenS))
	}
	fmt.Fprintf(&b, " first token %s, warm %s (TTFT %s after %d requests)", fmtS(c.FirstTokenS), fmtS(c.WarmS), fmtMs(c.WarmTTFTS), c.WarmRequests)
	if c.FirstTokenS != nil && c.WarmS == nil {
		fmt.Fprintf(&b, " — not steady within %d requests", c.WarmRequests)
	}
	if c.StopS != nil {
		fmt.Fprintf(&b, ", stopped in %s", fmtS(c.StopS))
		if c.Killed {
			b.WriteString(" (SIGKILL)")
		}
	}
	if c.WarmStart {
		b.WriteString(" — warm start: the endpoint had not scaled to zero")
	}
	return b.String()
}

// WriteTable writes the console tables: a row per cycle, then min,
// median and max of each milestone over the cold starts.
func (r *Report) WriteTable(w io.Writer) error {
	cycles, spread := r.Grids()
	cycles.Title, cycles.Meta, cycles.Notes = "", nil, nil
	if err := report.WriteGridText(w, cycles); err != nil {
		return err
	}
	if len(r.Cycles) < 2 || len(spread.Rows) == 0 {
		return nil
	}
	spread.Title = ""
	if _, err := io.WriteString(w, "\n"); err != nil {
		return err
	}
	return report.WriteGridText(w, spread)
}

// shown is the milestones of the table: listen only with a start command.
func (r *Report) shown() []milestone {
	if r.Mode == ModeStartCmd {
		return milestones
	}
	var out []milestone
	for _, ms := range milestones {
		if ms.name != "listen" && ms.name != "stop" {
			out = append(out, ms)
		}
	}
	return out
}

// WriteMarkdown writes coldstart.md: the cycles, then the spread.
func (r *Report) WriteMarkdown(w io.Writer) error {
	cycles, spread := r.Grids()
	if err := report.WriteGridMarkdown(w, cycles); err != nil {
		return err
	}
	if len(spread.Rows) == 0 {
		return nil
	}
	if _, err := io.WriteString(w, "\n"); err != nil {
		return err
	}
	return report.WriteGridMarkdown(w, spread)
}

// Grids is the report as tables: what was measured and how (target,
// mode, warm rule) with a row per cycle, and the spread of each
// milestone over the cycles that measured a cold start.
func (r *Report) Grids() (cycles, spread report.Grid) {
	cycles = report.Grid{Title: "Cold start", Meta: []report.KV{{Key: "target", Value: r.Target + ", model " + r.Model}}}
	if r.Mode == ModeStartCmd {
		cycles.Meta = append(cycles.Meta, report.KV{Key: "mode", Value: fmt.Sprintf("start command (t0 = the command started): `%s`; its output: %s", r.StartCmd, r.Log)})
	} else {
		cycles.Meta = append(cycles.Meta, report.KV{Key: "mode", Value: "scale from zero (t0 = the first request sent)"})
	}
	cycles.Meta = append(cycles.Meta, report.KV{Key: "warm rule", Value: fmt.Sprintf("%d consecutive TTFTs each within max(%g%% of their median, %g ms) of it; at most %d requests after the first token",
		r.Rule.Window, r.Rule.Tolerance*100, r.Rule.FloorMs, r.Rule.Max)})
	if r.Note != "" {
		cycles.Meta = append(cycles.Meta, report.KV{Key: "**note**", Value: r.Note})
	}
	if r.Interrupted {
		cycles.Meta = append(cycles.Meta, report.KV{Key: "**interrupted**", Value: "(Ctrl-C) the cycles below are those measured"})
	}
	if r.Problem != "" {
		cycles.Meta = append(cycles.Meta, report.KV{Key: "**stopped early**", Value: r.Problem})
	}
	cycles.Columns = []report.Column{{Key: "cycle", Head: "cycle", Kind: report.KindText}}
	for _, ms := range r.shown() {
		cycles.Columns = append(cycles.Columns, report.Column{Key: ms.name, Head: ms.title, Kind: ms.kind, Desc: ms.desc})
	}
	cycles.Columns = append(cycles.Columns,
		report.Column{Key: "probes", Head: "probes", Kind: report.KindCount, Desc: "requests sent until the first token"},
		report.Column{Key: "failed_probes", Head: "failed probes", Kind: report.KindText},
		report.Column{Key: "note", Head: "note", Kind: report.KindText})
	for i := range r.Cycles {
		c := &r.Cycles[i]
		row := []report.Cell{report.TextCell(fmt.Sprint(c.N))}
		for _, ms := range r.shown() {
			row = append(row, ms.cell(c))
		}
		row = append(row, report.NumCell(report.Val(float64(c.Probes))), report.TextCell(failures(c.ProbeFailures)), report.TextCell(cmp.Or(c.note(), "–")))
		cycles.Rows = append(cycles.Rows, row)
	}
	spread = report.Grid{Title: "Cold start: spread over the cycles", Columns: []report.Column{
		{Key: "milestone", Head: "milestone", Kind: report.KindText},
		{Key: "cycles", Head: "cycles", Kind: report.KindCount, Desc: "cycles that reached it, warm starts left out"},
		{Key: "min_s", Head: "min", Kind: report.KindDuration},
		{Key: "median_s", Head: "median", Kind: report.KindDuration},
		{Key: "max_s", Head: "max", Kind: report.KindDuration},
	}}
	for _, sp := range r.Summary {
		title := sp.Milestone
		for _, ms := range milestones {
			if ms.name == sp.Milestone {
				title = ms.title
			}
		}
		spread.Rows = append(spread.Rows, []report.Cell{report.TextCell(title), report.NumCell(report.Val(float64(sp.N))),
			report.NumCell(report.Val(sp.Min)), report.NumCell(report.Val(sp.Median)), report.NumCell(report.Val(sp.Max))})
	}
	return cycles, spread
}

// note is what a cycle's row says beside its milestones.
func (c *Cycle) note() string {
	note := ""
	switch {
	case c.WarmStart:
		note = "warm start: the endpoint had not scaled to zero (left out of the spread)"
	case c.FirstTokenS != nil && c.WarmS == nil:
		note = fmt.Sprintf("not steady in %d requests", c.WarmRequests)
	}
	if c.Killed {
		note = strings.TrimPrefix(note+"; needed SIGKILL", "; ")
	}
	return note
}

// failures lists failed probes by kind, "3 conn_error, 1 http_error 503".
func failures(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%d %s", m[k], k))
	}
	return strings.Join(parts, ", ")
}

// fmtS formats seconds, "–" when absent.
func fmtS(v *float64) string {
	switch {
	case v == nil:
		return "–"
	case *v < 10:
		return fmt.Sprintf("%.3fs", *v)
	}
	return fmt.Sprintf("%.1fs", *v)
}

// fmtMs formats seconds as milliseconds, "–" when absent.
func fmtMs(v *float64) string {
	if v == nil {
		return "–"
	}
	return fmt.Sprintf("%.1fms", *v*1000)
}
