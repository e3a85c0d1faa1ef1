package analyze

import (
	"fmt"
	"github.com/surge-bench/surge/internal/record"
	"strconv"
)

// Clause names in a Verdict.
const (
	ClauseTTFTP95      = "ttft_p95"
	ClauseE2EP99       = "e2e_p99"
	ClauseGoodputRatio = "goodput_ratio"
)

// Clause is one SLO clause checked against one group.
type Clause struct {
	Name     string  `json:"name"`     // ttft_p95, e2e_p99 or goodput_ratio
	Limit    float64 `json:"limit"`    // ms for latency clauses, a fraction for goodput_ratio
	Measured float64 `json:"measured"` // same unit; a lower bound when Censored
	Samples  int64   `json:"samples"`  // values behind Measured (offered requests for goodput_ratio)
	Censored bool    `json:"censored"` // the percentile is unknown (too many timeouts)
	Pass     bool    `json:"pass"`
	// Unknown marks a clause of an interrupted run (SLO.Interrupted) that
	// the requests surge cancelled decide: neither PASS nor FAIL.
	Unknown bool   `json:"unknown,omitempty"`
	Text    string `json:"text"` // e.g. "p95 TTFT 1.52s <= 2s: pass"
}

// Sure says whether v failed whatever the requests an interrupt
// cancelled would have done: a clause failed that is not Unknown. A
// verdict that did not pass and is not Sure is undecided.
func (v Verdict) Sure() bool {
	for _, c := range v.Clauses {
		if !c.Pass && !c.Unknown {
			return true
		}
	}
	return false
}

// Verdict is an SLO's outcome for one group: Pass when every clause passes
// (true when the SLO has no clauses).
type Verdict struct {
	Pass    bool     `json:"pass"`
	Clauses []Clause `json:"clauses"`
	// Partial marks the verdict of a run cut short (Ctrl-C, a budget): a
	// clause that held over what ran is reported PARTIAL, never PASS.
	Partial bool `json:"partial,omitempty"`
}

// MarkPartial marks the verdicts of a run cut short (every phase's and
// the overall one) as partial; see Verdict.Partial.
func (r *Result) MarkPartial() {
	r.Verdict.Partial = true
	for i := range r.Phases {
		r.Phases[i].SLO.Partial = true
	}
}

func passWord(ok bool) string {
	if ok {
		return "pass"
	}
	return "FAIL"
}

// latencyClause checks "quantile of d ≤ limit"; interrupted: see
// SLO.Interrupted.
func latencyClause(name, label string, d Dist, p99 bool, limitMs float64, interrupted bool) Clause {
	v, cens := d.P95Ms, d.P95Censored
	q := Q95
	if p99 {
		v, cens, q = d.P99Ms, d.P99Censored, Q99
	}
	c := Clause{Name: name, Limit: limitMs, Measured: v, Samples: d.Count, Censored: cens}
	switch {
	case cens && interrupted && d.Interrupted && v <= limitMs:
		c.Unknown = true
		c.Text = fmt.Sprintf("%s %s (unknown: %s), limit %s: not judged (the requests surge cancelled decide it)", label, d.Text(q), censorWhy(d), FormatMs(limitMs))
	case cens:
		c.Text = fmt.Sprintf("%s %s (unknown: %s), limit %s: %s", label, d.Text(q), censorWhy(d), FormatMs(limitMs), passWord(false))
	case d.Count == 0 && interrupted:
		c.Unknown = true
		c.Text = fmt.Sprintf("%s n/a (no samples before the interrupt), limit %s: not judged", label, FormatMs(limitMs))
	case d.Count == 0:
		c.Text = fmt.Sprintf("%s n/a (no samples), limit %s: %s", label, FormatMs(limitMs), passWord(false))
	default:
		c.Pass = v <= limitMs
		op := "<="
		if !c.Pass {
			op = ">"
		}
		c.Text = fmt.Sprintf("%s %s %s %s: %s", label, FormatMs(v), op, FormatMs(limitMs), passWord(c.Pass))
	}
	return c
}

// Check applies the SLO to s: the verdict of a group the analysis does
// not judge itself, such as a soak's window.
func (slo SLO) Check(s *Stats) Verdict { return slo.check(s) }

// check applies the SLO to s.
func (slo SLO) check(s *Stats) Verdict {
	v := Verdict{Pass: true, Clauses: []Clause{}}
	if slo.TTFTP95 > 0 {
		v.Clauses = append(v.Clauses, latencyClause(ClauseTTFTP95, "p95 TTFT", s.Latency.TTFTSchedule, false, durMs(slo.TTFTP95), slo.Interrupted))
	}
	if slo.E2EP99 > 0 {
		v.Clauses = append(v.Clauses, latencyClause(ClauseE2EP99, "p99 E2E", s.Latency.E2ESchedule, true, durMs(slo.E2EP99), slo.Interrupted))
	}
	if slo.GoodputRatio > 0 {
		c := Clause{Name: ClauseGoodputRatio, Limit: slo.GoodputRatio, Measured: s.GoodputRatio, Samples: s.Offered}
		if s.Offered == 0 && slo.Interrupted {
			c.Unknown = true
			c.Text = fmt.Sprintf("goodput n/a (nothing offered before the interrupt), limit %s of offered: not judged", pct(slo.GoodputRatio))
		} else if s.Offered == 0 {
			c.Text = fmt.Sprintf("goodput n/a (nothing offered), limit %s of offered: %s", pct(slo.GoodputRatio), passWord(false))
		} else {
			c.Pass = s.GoodputRatio >= slo.GoodputRatio
			op := ">="
			if !c.Pass {
				op = "<"
			}
			c.Text = fmt.Sprintf("goodput %s of offered %s %s: %s", pct(s.GoodputRatio), op, pct(slo.GoodputRatio), passWord(c.Pass))
			// Had the requests surge cancelled all finished in time:
			// the best the target could have done.
			if n := s.Outcomes[record.Cancelled]; !c.Pass && slo.Interrupted && n > 0 {
				if best := float64(s.Good+n) / float64(s.Offered); best >= slo.GoodputRatio {
					c.Unknown = true
					c.Text = fmt.Sprintf("goodput %s of offered, up to %s had the %d requests surge cancelled finished in time, limit %s: not judged", pct(s.GoodputRatio), pct(best), n, pct(slo.GoodputRatio))
				}
			}
		}
		v.Clauses = append(v.Clauses, c)
	}
	for _, c := range v.Clauses {
		v.Pass = v.Pass && c.Pass
	}
	return v
}

func pct(f float64) string {
	return trimZeros(strconv.FormatFloat(f*100, 'f', 2, 64)) + "%"
}

// censorWhy says what made a percentile of d unknown.
func censorWhy(d Dist) string {
	switch {
	case d.Interrupted && d.CensorMs > 0:
		return "too many timeouts and requests cancelled in flight"
	case d.Interrupted:
		return "too many requests cancelled in flight (interrupted)"
	}
	return "too many timeouts"
}

// notJudged ends the Brief of an Unknown clause.
const notJudged = "not judged: requests cancelled by the interrupt"

// Brief is the clause as measured vs limit, for a line that already says
// PASS or FAIL: "p95 TTFT 2.5s (limit 2s)", "p99 completion > 60s (limit
// 12s)" when only a lower bound is known, "goodput 96.5% (limit 99%)";
// "n/a" without samples.
func (c Clause) Brief() string {
	switch c.Name {
	case ClauseTTFTP95, ClauseE2EP99:
		label := "p95 TTFT"
		if c.Name == ClauseE2EP99 {
			label = "p99 completion"
		}
		v := FormatMs(c.Measured)
		switch {
		case c.Unknown && c.Samples == 0:
			return fmt.Sprintf("%s n/a (limit %s; not judged: no samples before the interrupt)", label, FormatMs(c.Limit))
		case c.Unknown:
			return fmt.Sprintf("%s > %s (limit %s; %s)", label, v, FormatMs(c.Limit), notJudged)
		case c.Censored:
			v = "> " + v
		case c.Samples == 0:
			v = "n/a"
		}
		return fmt.Sprintf("%s %s (limit %s)", label, v, FormatMs(c.Limit))
	}
	v := "n/a"
	if c.Samples > 0 {
		v = share(c.Measured, c.Limit, c.Pass)
	}
	lim := strconv.FormatFloat(100*c.Limit, 'f', -1, 64) + "%"
	if c.Unknown && c.Samples == 0 {
		return fmt.Sprintf("goodput n/a (limit %s; not judged: nothing offered before the interrupt)", lim)
	}
	if c.Unknown {
		return fmt.Sprintf("goodput %s (limit %s; %s)", v, lim, notJudged)
	}
	return fmt.Sprintf("goodput %s (limit %s)", v, lim)
}

// share prints a fraction as a percentage with one decimal, or two when
// one would round a failing value onto its limit (98.96% shown as 99.0%
// against a 99% limit would read as a pass).
func share(v, limit float64, pass bool) string {
	s := strconv.FormatFloat(100*v, 'f', 1, 64)
	if !pass {
		if r, _ := strconv.ParseFloat(s, 64); r >= 100*limit {
			s = strconv.FormatFloat(100*v, 'f', 2, 64)
		}
	}
	return s + "%"
}
