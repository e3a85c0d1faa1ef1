package report

import (
	"encoding/json"
	"math"
	"strconv"
)

// NA is how every renderer except JSON prints an unavailable value.
const NA = "n/a"

// Reasons callers are likely to need, so the same situation reads the same
// way in every report.
const (
	// ReasonNoEngineTelemetry explains an unavailable engine queue wait.
	ReasonNoEngineTelemetry = "no engine telemetry: load-induced latency is extra observed latency, not queue time"
	// ReasonNoEngineTiming explains a missing per-request engine queue wait.
	ReasonNoEngineTiming = "no per-request engine timing (--otlp-listen with vLLM, or llama.cpp's timings)"
	// ReasonNoMetricsURL explains an engine figure of a run without engine
	// scraping.
	ReasonNoMetricsURL = "no --metrics-url"
	// ReasonNotExported begins the explanation of an engine figure whose
	// metric the engine does not export although its scrapes succeeded.
	ReasonNotExported = "metric not exported by this engine"
	// ExtraObservedLatency ends the reason of a queue wait the engine did
	// not give: then load-induced latency is not called queue time.
	ExtraObservedLatency = " — load-induced latency is extra observed latency, not queue time"
	// ReasonNoSamples explains a percentile or rate over zero requests.
	ReasonNoSamples = "no samples"
	// ReasonNoBurst explains burst-only columns of a run without a burst.
	ReasonNoBurst = "no burst in this run"
	// ReasonCensoredP99 explains a P99 that is only known as a lower bound.
	ReasonCensoredP99 = "more than 1% of requests timed out: P99 is above the timeout"
)

// Opt is a number that may be unavailable or known only as a lower bound.
// Its zero value is unavailable with no reason, so a field the caller forgot
// to fill prints as n/a, never as 0.
type Opt struct {
	V        float64 // the value (or the bound when Censored)
	Valid    bool    // V is the measured value
	Censored bool    // V is a bound: the true value is above it (below it with AtMost)
	AtMost   bool    // with Censored: V is an upper bound, the true value is at most V
	Reason   string  // why the value is unavailable or censored
}

// Val returns an available value.
func Val(v float64) Opt { return Opt{V: v, Valid: true} }

// Unavailable returns an unavailable value with the reason it is missing.
func Unavailable(reason string) Opt { return Opt{Reason: reason} }

// Above returns a censored value: only known to be greater than lowerBound.
func Above(lowerBound float64, reason string) Opt {
	return Opt{V: lowerBound, Censored: true, Reason: reason}
}

// AtMost returns a value known only as an upper bound: the true value is at
// most upperBound (a quantile inside a histogram's first bucket).
func AtMost(upperBound float64, reason string) Opt {
	return Opt{V: upperBound, Censored: true, AtMost: true, Reason: reason}
}

// boundPrefix is how a censored value's bound is introduced: "> " for a
// lower bound, "≤ " for an upper bound.
func (o Opt) boundPrefix() string {
	if o.AtMost {
		return "≤ "
	}
	return "> "
}

// state classifies o; a NaN or infinite "valid" value counts as unavailable.
func (o Opt) state() (valid, censored bool) {
	finite := !math.IsNaN(o.V) && !math.IsInf(o.V, 0)
	switch {
	case o.Censored && finite:
		return false, true
	case o.Valid && !o.Censored && finite:
		return true, false
	}
	return false, false
}

// reason returns o's reason, with a default for a value that is not finite.
func (o Opt) reason() string {
	if o.Reason == "" && (o.Valid || o.Censored) {
		return "not a finite number"
	}
	return o.Reason
}

// MarshalJSON encodes o as {"value": v}, {"value": null, "reason": "…"} or,
// when censored, {"value": null, "lower_bound": v, "reason": "…"}
// ("upper_bound" with AtMost).
func (o Opt) MarshalJSON() ([]byte, error) {
	return json.Marshal(o.jsonValue())
}

type optJSON struct {
	Value      *float64 `json:"value"`
	LowerBound *float64 `json:"lower_bound,omitempty"`
	UpperBound *float64 `json:"upper_bound,omitempty"`
	Reason     string   `json:"reason,omitempty"`
}

func (o Opt) jsonValue() optJSON {
	valid, censored := o.state()
	v := o.V
	switch {
	case valid:
		return optJSON{Value: &v}
	case censored && o.AtMost:
		return optJSON{UpperBound: &v, Reason: o.reason()}
	case censored:
		return optJSON{LowerBound: &v, Reason: o.reason()}
	}
	return optJSON{Reason: orUnknown(o.reason())}
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// raw formats o for CSV: the shortest exact decimal, ">bound" when censored
// ("<=bound" with AtMost), or n/a.
func (o Opt) raw() string {
	valid, censored := o.state()
	switch {
	case valid:
		return rawFloat(o.V)
	case censored && o.AtMost:
		return "<=" + rawFloat(o.V)
	case censored:
		return ">" + rawFloat(o.V)
	}
	return NA
}

func rawFloat(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// RecoveryState says how a run's recovery ended.
type RecoveryState int

// The recovery states. The zero value is unknown, printed as n/a.
const (
	RecoveryUnknown RecoveryState = iota // not measured or not applicable
	Recovered                            // recovered after Seconds
	NotRecovered                         // still not recovered Seconds after the burst ended
	NeverDrains                          // predicted: baseline λ ≥ capacity μ, the backlog never drains
)

// String returns the state's name as used in JSON.
func (s RecoveryState) String() string {
	switch s {
	case Recovered:
		return "recovered"
	case NotRecovered:
		return "not_recovered"
	case NeverDrains:
		return "never"
	}
	return NA
}

// Recovery is a measured or predicted recovery time, in seconds after the
// end of the burst.
type Recovery struct {
	State   RecoveryState
	Seconds float64 // Recovered: time to recover; NotRecovered: time watched
	Reason  string  // why unknown, or a note
}

// RecoveredAfter returns a recovery that took s seconds.
func RecoveredAfter(s float64) Recovery { return Recovery{State: Recovered, Seconds: s} }

// NotRecoveredWithin returns a recovery still missing s seconds after the burst.
func NotRecoveredWithin(s float64) Recovery { return Recovery{State: NotRecovered, Seconds: s} }

// RecoveryNA returns an unknown recovery with the reason.
func RecoveryNA(reason string) Recovery { return Recovery{Reason: reason} }

// NeverRecovers returns a prediction that the backlog never drains.
func NeverRecovers(reason string) Recovery { return Recovery{State: NeverDrains, Reason: reason} }

func (r Recovery) finite() bool { return !math.IsNaN(r.Seconds) && !math.IsInf(r.Seconds, 0) }

// text formats r for Markdown and HTML.
func (r Recovery) text() string {
	switch {
	case r.State == Recovered && r.finite():
		return fmtSeconds(r.Seconds)
	case r.State == NotRecovered && r.finite():
		return "did not recover within " + fmtSeconds(r.Seconds)
	case r.State == NeverDrains:
		return "never"
	}
	return NA
}

// raw formats r for CSV: seconds, ">watched" when not recovered, "never", or n/a.
func (r Recovery) raw() string {
	switch {
	case r.State == Recovered && r.finite():
		return rawFloat(r.Seconds)
	case r.State == NotRecovered && r.finite():
		return ">" + rawFloat(r.Seconds)
	case r.State == NeverDrains:
		return "never"
	}
	return NA
}

type recoveryJSON struct {
	Status     string   `json:"status"`
	Value      *float64 `json:"value"`
	LowerBound *float64 `json:"lower_bound,omitempty"`
	Reason     string   `json:"reason,omitempty"`
}

// MarshalJSON encodes r as {"status": …, "value": seconds or null, …}.
func (r Recovery) MarshalJSON() ([]byte, error) {
	s := r.Seconds
	j := recoveryJSON{Status: r.State.String(), Reason: r.Reason}
	switch {
	case r.State == Recovered && r.finite():
		j.Value = &s
	case r.State == NotRecovered && r.finite():
		j.LowerBound = &s
		if j.Reason == "" {
			j.Reason = "did not recover within " + fmtSeconds(s)
		}
	case r.State == NeverDrains:
		if j.Reason == "" {
			j.Reason = "backlog never drains"
		}
	default:
		j.Status = NA
		j.Reason = orUnknown(r.Reason)
	}
	return json.Marshal(j)
}

// fmtSeconds prints seconds compactly: "42s", "7.5s", "0.25s".
func fmtSeconds(s float64) string {
	switch {
	case s == math.Trunc(s) || math.Abs(s) >= 100:
		return strconv.FormatFloat(math.Round(s), 'f', -1, 64) + "s"
	case math.Abs(s) >= 1:
		return strconv.FormatFloat(s, 'f', 1, 64) + "s"
	}
	return strconv.FormatFloat(s, 'f', 2, 64) + "s"
}

// fmtMs prints a latency in milliseconds for tables: "812", "7.5", "12345".
func fmtMs(ms float64) string {
	if math.Abs(ms) >= 10 {
		return strconv.FormatFloat(math.Round(ms), 'f', -1, 64)
	}
	return strconv.FormatFloat(ms, 'f', 1, 64)
}

// fmtBoundMs prints a censored latency's bound after prefix ("> " or
// "≤ "): "> 60s", "> 850ms", "≤ 300ms".
func fmtBoundMs(prefix string, ms float64) string {
	if math.Abs(ms) >= 1000 {
		return prefix + fmtSeconds(ms/1000)
	}
	return prefix + fmtMs(ms) + "ms"
}

// fmtMultiplier prints k as "5×" or "2.5×".
func fmtMultiplier(k float64) string {
	return strconv.FormatFloat(k, 'f', -1, 64) + "×"
}
