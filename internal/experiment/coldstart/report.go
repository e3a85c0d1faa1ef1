package coldstart

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

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
	get         func(*Cycle) *float64
}

// milestones lists the reported milestones.
var milestones = []milestone{
	{"listen", "listen", func(c *Cycle) *float64 { return c.ListenS }},
	{"first_token", "first token", func(c *Cycle) *float64 { return c.FirstTokenS }},
	{"cold_ttft", "cold TTFT", func(c *Cycle) *float64 { return c.ColdTTFTS }},
	{"warm", "warm", func(c *Cycle) *float64 { return c.WarmS }},
	{"warm_ttft", "warm TTFT", func(c *Cycle) *float64 { return c.WarmTTFTS }},
	{"stop", "stop", func(c *Cycle) *float64 { return c.StopS }},
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

// WriteTable writes the console table: a row per cycle, then min, median
// and max of each milestone. Every cell, the last (the note) too, ends
// with a tab: tabwriter aligns only terminated cells, and an unterminated
// note would be glued to the right-aligned probes ("1warm start").
func (r *Report) WriteTable(w io.Writer) error {
	var buf strings.Builder
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := []string{"cycle"}
	for _, ms := range r.shown() {
		head = append(head, ms.title)
	}
	head = append(head, "probes", "")
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for i := range r.Cycles {
		c := &r.Cycles[i]
		row := []string{fmt.Sprint(c.N)}
		for _, ms := range r.shown() {
			row = append(row, fmtAny(ms.name, ms.get(c)))
		}
		note := ""
		if c.WarmStart {
			note = "warm start"
		}
		row = append(row, fmt.Sprint(c.Probes), note)
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	if len(r.Cycles) > 1 {
		for _, stat := range []string{"min", "median", "max"} {
			row := []string{stat}
			for _, ms := range r.shown() {
				row = append(row, r.stat(ms.name, stat))
			}
			row = append(row, "", "")
			fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var out strings.Builder
	for _, l := range strings.SplitAfter(buf.String(), "\n") {
		out.WriteString(strings.TrimRight(l, " \n"))
		if strings.HasSuffix(l, "\n") {
			out.WriteString("\n")
		}
	}
	_, err := io.WriteString(w, out.String())
	return err
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

// stat is one statistic of a milestone's spread, formatted; "–" if no
// cycle reached it.
func (r *Report) stat(name, stat string) string {
	for _, s := range r.Summary {
		if s.Milestone == name {
			v := map[string]float64{"min": s.Min, "median": s.Median, "max": s.Max}[stat]
			return fmtAny(name, &v)
		}
	}
	return "–"
}

// WriteMarkdown writes coldstart.md.
func (r *Report) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Cold start\n\n")
	fmt.Fprintf(&b, "- target: %s, model %s\n", r.Target, r.Model)
	if r.Mode == ModeStartCmd {
		fmt.Fprintf(&b, "- mode: start command (t0 = the command started): `%s`; its output: %s\n", r.StartCmd, r.Log)
	} else {
		fmt.Fprintf(&b, "- mode: scale from zero (t0 = the first request sent)\n")
	}
	fmt.Fprintf(&b, "- warm rule: %d consecutive TTFTs each within max(%g%% of their median, %g ms) of it; at most %d requests after the first token\n",
		r.Rule.Window, r.Rule.Tolerance*100, r.Rule.FloorMs, r.Rule.Max)
	if r.Note != "" {
		fmt.Fprintf(&b, "- **note**: %s\n", r.Note)
	}
	if r.Interrupted {
		b.WriteString("- **interrupted** (Ctrl-C): the cycles below are those measured\n")
	}
	if r.Problem != "" {
		fmt.Fprintf(&b, "- **stopped early**: %s\n", r.Problem)
	}
	b.WriteString("\n| cycle |")
	for _, ms := range r.shown() {
		fmt.Fprintf(&b, " %s |", ms.title)
	}
	b.WriteString(" probes | failed probes | note |\n|--:|")
	for range r.shown() {
		b.WriteString("--:|")
	}
	b.WriteString("--:|:--|:--|\n")
	for i := range r.Cycles {
		c := &r.Cycles[i]
		fmt.Fprintf(&b, "| %d |", c.N)
		for _, ms := range r.shown() {
			fmt.Fprintf(&b, " %s |", fmtAny(ms.name, ms.get(c)))
		}
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
		fmt.Fprintf(&b, " %d | %s | %s |\n", c.Probes, failures(c.ProbeFailures), note)
	}
	if len(r.Summary) > 0 {
		b.WriteString("\n| milestone | cycles | min | median | max |\n|:--|--:|--:|--:|--:|\n")
		for _, s := range r.Summary {
			fmt.Fprintf(&b, "| %s | %d | %s | %s | %s |\n", s.Milestone, s.N, fmtAny(s.Milestone, &s.Min), fmtAny(s.Milestone, &s.Median), fmtAny(s.Milestone, &s.Max))
		}
	}
	b.WriteString("\nlisten: t0 → first accepted TCP connection; first token: t0 → first token of the first successful request; " +
		"cold TTFT: that request's own TTFT; warm: t0 → the first request of the first steady window; warm TTFT: that window's median; " +
		"stop: SIGTERM → port closed (docs/metrics.md, \"Cold start\").\n")
	_, err := io.WriteString(w, b.String())
	return err
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

// fmtAny formats a milestone: TTFTs in ms, the others in s.
func fmtAny(name string, v *float64) string {
	if strings.HasSuffix(name, "ttft") {
		return fmtMs(v)
	}
	return fmtS(v)
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
