package judge

import (
	"fmt"
	"math"
	"strings"

	"github.com/surge-bench/surge/internal/analyze"
)

// MinDriftWindows is the number of windows with a value a Series needs
// before TestDrift tests it.
const MinDriftWindows = 6

// The verdicts of DriftVerdict over the drift tests of a run.
const (
	DriftStable       = "stable"       // at least one series tested, none drifting
	DriftDrifting     = "drifting"     // at least one series drifting
	DriftInconclusive = "inconclusive" // no series could be tested
)

// Series is one window series of a long run (a soak) before its drift test:
// one value per window, e.g. a window's p95 completion or failure rate.
type Series struct {
	Metric    string    // what the values are, e.g. "p95 completion"; starts the Text of the Drift
	Unit      string    // of Y and of an absolute Threshold: "ms", "fraction" (0..1) or anything else (printed as a plain number)
	X         []float64 // each window's time, e.g. its mid-time in hours since the soak began; the slope is in Unit per X unit
	Y         []float64 // each window's value, Y[i] at X[i]; NaN where a window has none
	Threshold float64   // the change over the run that counts as drift: a fraction of the mean when Relative, else absolute in Unit
	Relative  bool      // Threshold is relative to the series' mean (latencies) rather than absolute (rates, usage)
}

// Drift is the drift test of one Series (see TestDrift). Its JSON is the
// "trends" entries of soak.json.
type Drift struct {
	Metric    string        `json:"metric"` // e.g. "p95 completion"
	Unit      string        `json:"unit"`   // of the series: ms, fraction
	Windows   int           `json:"windows"`
	Tested    bool          `json:"tested"`
	Why       string        `json:"why,omitempty"` // why not tested
	Trend     analyze.Trend `json:"trend"`         // slope in unit per hour
	Change    float64       `json:"change"`        // fitted change over the soak, in unit
	Relative  float64       `json:"relative"`      // change / mean (latencies); 0 otherwise
	Threshold float64       `json:"threshold"`     // what counts as drift: relative (latencies) or absolute
	IsRel     bool          `json:"threshold_is_relative"`
	Drifting  bool          `json:"drifting"`
	Text      string        `json:"text"`
}

// TestDrift applies the drift rule to s: it fits a Trend (FitTrend, slope
// interval at the given confidence, e.g. 0.95) to the windows with a finite
// value and calls the series drifting when both hold:
//
//	the slope's confidence interval excludes 0                  (Trend.Significant)
//	|change| ≥ Threshold                                        (absolute series)
//	|change / ȳ| ≥ Threshold                                    (Relative series)
//
//	change = slope × (x_last − x_first)   the fitted change over the run, in Unit,
//	                                      x_first and x_last the first and last
//	                                      x of a window with a value
//	ȳ      = the mean of those windows' values (Trend.MeanY); change / ȳ
//	         is taken as 0 when ȳ ≤ 0
//
// The second clause keeps a statistically significant but harmless drift —
// and the optimism of a test that treats consecutive windows as
// independent — from raising an alarm. A series with fewer than
// MinDriftWindows windows with values, or whose windows share a single x,
// is not tested (Tested false, Why says which). Text is one line for
// people, e.g. "p95 completion: +256ms per hour (95% CI …) … → DRIFTING up".
func TestDrift(s Series, confidence float64) Drift {
	st := Drift{Metric: s.Metric, Unit: s.Unit, Threshold: s.Threshold, IsRel: s.Relative}
	for i := range s.Y {
		if isFinite(s.Y[i]) {
			st.Windows++
		}
	}
	if st.Windows < MinDriftWindows {
		st.Why = fmt.Sprintf("only %d windows with values (need %d)", st.Windows, MinDriftWindows)
		st.Text = s.Metric + ": not tested, " + st.Why
		return st
	}
	tr, ok := analyze.FitTrend(s.X, s.Y, confidence)
	if !ok {
		st.Why = "no spread in time"
		st.Text = s.Metric + ": not tested, " + st.Why
		return st
	}
	st.Tested, st.Trend = true, tr
	lo, hi := math.Inf(1), math.Inf(-1)
	for i := range s.X {
		if i < len(s.Y) && isFinite(s.Y[i]) {
			lo, hi = math.Min(lo, s.X[i]), math.Max(hi, s.X[i])
		}
	}
	st.Change = tr.Slope * (hi - lo)
	big := math.Abs(st.Change) >= s.Threshold
	if s.Relative {
		if tr.MeanY > 0 {
			st.Relative = st.Change / tr.MeanY
		}
		big = math.Abs(st.Relative) >= s.Threshold
	}
	st.Drifting = tr.Significant() && big
	f := func(v float64) string { return fmtUnit(v, s.Unit) }
	// A stable series says which half of the rule it missed: a change
	// past the threshold whose interval includes 0 is noise, not drift.
	verdict := "stable: the CI includes 0 (not significant) and the change is under the threshold"
	switch {
	case st.Drifting && st.Change > 0:
		verdict = "DRIFTING up"
	case st.Drifting:
		verdict = "DRIFTING down"
	case tr.Significant():
		verdict = "stable: a significant trend, but the change is under the threshold"
	case big:
		verdict = "stable: the change reaches the threshold, but the CI includes 0 (not significant)"
	}
	rel := ""
	if s.Relative {
		rel = fmt.Sprintf(" (%+.1f%% of its mean %s)", 100*st.Relative, f(tr.MeanY))
	}
	thr := f(s.Threshold)
	if s.Relative {
		thr = fmt.Sprintf("%g%% of the mean", 100*s.Threshold)
	}
	st.Text = fmt.Sprintf("%s: %s per hour (%g%% CI %s to %s, p = %.2g, %d windows); fitted change over the soak %s%s; drift threshold %s → %s",
		s.Metric, signed(f(tr.Slope), tr.Slope), 100*confidence, f(tr.CILow), f(tr.CIHigh), tr.P, st.Windows, signed(f(st.Change), st.Change), rel, thr, verdict)
	return st
}

// DriftVerdict sums up the drift tests of a run: DriftDrifting when any
// series drifts, DriftStable when at least one was tested and none drifts,
// DriftInconclusive when none could be tested (or there are none).
func DriftVerdict(drifts []Drift) string {
	tested := false
	for _, t := range drifts {
		if t.Drifting {
			return DriftDrifting
		}
		tested = tested || t.Tested
	}
	if tested {
		return DriftStable
	}
	return DriftInconclusive
}

// signed prefixes s, the formatted v, with "+" when v ≥ 0.
func signed(s string, v float64) string {
	if v >= 0 && !strings.HasPrefix(s, "+") {
		return "+" + s
	}
	return s
}

// fmtUnit formats v of the given unit with three significant digits:
// "812ms" or "1.52s" for ms, "1.5%" for a fraction, "0.123" otherwise.
func fmtUnit(v float64, unit string) string {
	switch unit {
	case "ms":
		if math.Abs(v) >= 1000 {
			return fmt.Sprintf("%.3gs", v/1000)
		}
		return fmt.Sprintf("%.3gms", v)
	case "fraction":
		return fmt.Sprintf("%.3g%%", 100*v)
	}
	return fmt.Sprintf("%.3g", v)
}

func isFinite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// DriftOutcome is the drift test's verdict as an outcome: FAIL when a
// series drifted, INCONCLUSIVE when none could be tested.
func DriftOutcome(verdict string) Outcome {
	switch verdict {
	case DriftDrifting:
		return Fail
	case DriftInconclusive:
		return Inconclusive
	}
	return Pass
}
