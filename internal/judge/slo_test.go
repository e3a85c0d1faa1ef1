package judge

import (
	"strings"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/record"
)

func phaseStats(t *testing.T, recs ...*record.Record) *analyze.Stats {
	t.Helper()
	a, err := analyze.New(analyze.Config{Phases: []analyze.Phase{{Name: "steady", End: 1000 * s}}, Timeout: 60 * s})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		a.Add(r)
	}
	return &a.Result().Overall
}

func clause(v Verdict, name string) Clause {
	for _, c := range v.Clauses {
		if c.Name == name {
			return c
		}
	}
	return Clause{}
}

// Must show: 40 of 42 timeouts received their first token, so TTFT is
// known (p95 PASS); completion FAILs with the timeouts as its reason.
func TestCensoringTimeoutsAfterFirstToken(t *testing.T) {
	var recs []*record.Record
	for i := range 958 {
		recs = append(recs, okRec(time.Duration(i)*100*ms, 0, 40*ms, 2*s))
	}
	for i := range 42 {
		r := failRec(time.Duration(i)*100*ms, record.Timeout)
		if i >= 2 {
			r.FirstTokenNs = r.ScheduledNs + int64(45*ms)
		}
		recs = append(recs, r)
	}
	slo := SLO{TTFTP95: 100 * time.Millisecond, E2EP99: 12 * time.Second}
	v := slo.Check(phaseStats(t, recs...))
	ttft, e2e := clause(v, ClauseTTFTP95), clause(v, ClauseE2EP99)
	if ttft.Outcome != Pass || ttft.Bound {
		t.Errorf("TTFT clause %s (%s), want PASS: %s", ttft.Outcome, ttft.Value(), ttft.Reason)
	}
	if e2e.Outcome != Fail || !strings.Contains(e2e.Brief(), "42 timeouts (4.2%) put the p99 above the 60s timeout") {
		t.Errorf("completion clause %s: %s", e2e.Outcome, e2e.Brief())
	}
	if v.Outcome != Fail {
		t.Errorf("verdict %s, want FAIL", v.Outcome)
	}
}

// Each latency clause is decided by its percentile's interval: PASS when
// the interval is within the limit, FAIL when it lies above it,
// INCONCLUSIVE in between and when the sample cannot bound it above.
func TestLatencyClauseByInterval(t *testing.T) {
	lin := func(n int, top time.Duration) []*record.Record {
		var out []*record.Record
		for i := range n {
			d := top * time.Duration(i+1) / time.Duration(n)
			out = append(out, okRec(time.Duration(i)*10*ms, 0, d, d))
		}
		return out
	}
	slo := SLO{TTFTP95: 2 * time.Second, E2EP99: 2 * time.Second}
	for _, tc := range []struct {
		name       string
		recs       []*record.Record
		ttft, e2e  Outcome
		e2eReasons string
	}{
		// 1000 values up to 1.9 s: both bounded under 2 s.
		{"well within", lin(1000, 1900*ms), Pass, Pass, ""},
		// up to 2.2 s: p95 ≈ 2.09 s, interval above 2 s.
		{"well above", lin(1000, 2200*ms), Fail, Fail, "with 95% confidence"},
		// 200 values up to 2.02 s: the p95 (1.92 s) is bounded under 2 s;
		// the p99 (2.0 s) could only be bounded above by 368 values.
		{"the p99 cannot be bounded", lin(200, 2020*ms), Pass, Inconclusive, "a p99 needs 368 values to be bounded above"},
		{"six values", lin(6, 100*ms), Inconclusive, Inconclusive, "a p99 needs 368 values"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := slo.Check(phaseStats(t, tc.recs...))
			ttft, e2e := clause(v, ClauseTTFTP95), clause(v, ClauseE2EP99)
			if ttft.Outcome != tc.ttft || e2e.Outcome != tc.e2e {
				t.Errorf("ttft %s (%s), e2e %s (%s); want %s, %s", ttft.Outcome, ttft.Brief(), e2e.Outcome, e2e.Brief(), tc.ttft, tc.e2e)
			}
			if !strings.Contains(e2e.Reason, tc.e2eReasons) {
				t.Errorf("e2e reason %q lacks %q", e2e.Reason, tc.e2eReasons)
			}
		})
	}
}

// Goodput is judged by its Clopper–Pearson interval.
func TestGoodputClause(t *testing.T) {
	for _, tc := range []struct {
		good, offered int64
		want          Outcome
		reason        string
	}{
		{400, 400, Pass, ""},
		{100, 100, Inconclusive, "all good bounds it only at ≥ 96.38%; 368 arrivals are needed"},
		{995, 1000, Inconclusive, "straddles the limit"},
		{950, 1000, Fail, "with 95% confidence"},
		{0, 0, Inconclusive, "no requests"},
	} {
		st := &analyze.Stats{Offered: tc.offered, Good: tc.good, Outcomes: map[record.Outcome]int64{}}
		if tc.offered > 0 {
			st.GoodputRatio = float64(tc.good) / float64(tc.offered)
		}
		c := clause(SLO{GoodputRatio: 0.99}.Check(st), ClauseGoodputRatio)
		if c.Outcome != tc.want || !strings.Contains(c.Reason, tc.reason) {
			t.Errorf("%d of %d good: %s (%s), want %s (%s)", tc.good, tc.offered, c.Outcome, c.Reason, tc.want, tc.reason)
		}
	}
}

// After a Ctrl-C the requests surge cancelled are not failures of the
// target. A clause they decide is INCONCLUSIVE, marked Cancelled; one
// that fails whatever they would have done still fails, and without the
// interrupt they are failures like any other.
func TestInterruptedClauses(t *testing.T) {
	st := func(good, cancelled int64, ttftLo float64) *analyze.Stats {
		s := &analyze.Stats{Offered: 1000, Good: good, GoodputRatio: float64(good) / 1000, Outcomes: map[record.Outcome]int64{record.Cancelled: cancelled}}
		s.Latency.TTFTSchedule = analyze.Dist{Count: good, Censored: cancelled, P95Ms: ttftLo, P95Censored: true, Interrupted: true,
			P95CI: analyze.Interval{LoMs: ttftLo, HiOpen: true, LoCensored: true}}
		return s
	}
	slo := SLO{TTFTP95: 2 * time.Second, GoodputRatio: 0.99, Interrupted: true}

	v := slo.Check(st(600, 400, 554))
	if v.Outcome != Inconclusive || !v.cancelledOnly() {
		t.Fatalf("undecided verdict: %s %+v", v.Outcome, v.Clauses)
	}
	for _, c := range v.Clauses {
		if !c.Cancelled || !strings.Contains(c.Reason, "surge cut short") {
			t.Errorf("%s: %s cancelled %v: %s", c.Name, c.Outcome, c.Cancelled, c.Reason)
		}
	}
	// A lower bound over the limit, and a goodput that fails even had
	// every cancelled request finished in time: failures.
	if v := slo.Check(st(500, 100, 2500)); v.Outcome != Fail {
		t.Fatalf("sure failure: %s %+v", v.Outcome, v.Clauses)
	}
	// Not interrupted (a budget stop, a whole run): the goodput fails.
	slo.Interrupted = false
	if v := slo.Check(st(600, 400, 554)); v.Outcome != Fail {
		t.Errorf("without the interrupt: %s %+v", v.Outcome, v.Clauses)
	}
}

// Bad input: no requests at all is INCONCLUSIVE, never a crash or PASS.
func TestNothingToJudge(t *testing.T) {
	v := DefaultSLO.Check(&analyze.Stats{})
	if v.Outcome != Inconclusive {
		t.Fatalf("%s: %+v", v.Outcome, v.Clauses)
	}
	for _, c := range v.Clauses {
		if c.Outcome != Inconclusive || c.Reason != "no requests" || !strings.Contains(c.Brief(), "n/a") {
			t.Errorf("%s: %s", c.Name, c.Brief())
		}
	}
	// Every request failed: no first token, no completion: the latency
	// clauses cannot be judged, the goodput fails.
	var recs []*record.Record
	for i := range 500 {
		recs = append(recs, failRec(time.Duration(i)*10*ms, record.HTTPError))
	}
	v = DefaultSLO.Check(phaseStats(t, recs...))
	if c := clause(v, ClauseTTFTP95); c.Outcome != Inconclusive || c.Reason != "none of 500 requests got a first token" {
		t.Errorf("ttft: %s", c.Brief())
	}
	if v.Outcome != Fail {
		t.Errorf("verdict %s, want FAIL by goodput", v.Outcome)
	}
	if (SLO{}).Check(&analyze.Stats{}).Outcome != Pass {
		t.Error("an SLO without clauses passes")
	}
}

func TestMinForUpperBound(t *testing.T) {
	for q, want := range map[float64]int64{0.5: 6, 0.95: 72, 0.99: 368} {
		if got := MinForUpperBound(q); got != want {
			t.Errorf("MinForUpperBound(%g) = %d, want %d", q, got, want)
		}
	}
}

// The early stop: the first requests all failed by a cause no load
// explains.
func TestUnusable(t *testing.T) {
	refused := func(at time.Duration) *record.Record {
		r := failRec(at, record.ConnError)
		r.Error = "connection refused"
		return r
	}
	u := NewUnusable("")
	for i := range 4 {
		u.Add(refused(time.Duration(i) * s))
	}
	if why := u.Stop(20 * s); why != "" {
		t.Fatalf("4 requests stopped the run: %s", why)
	}
	u.Add(refused(4 * s))
	if why := u.Stop(5 * s); why != "" {
		t.Fatalf("5 requests in 5 s stopped the run: %s", why)
	}
	if why := u.Stop(11 * s); why != "the target is unusable: the first 5 requests all failed: target unreachable (connection refused)" || !u.Tripped() {
		t.Fatalf("5 requests over 10 s: %q", why)
	}
	// One success, or a failure load explains, ends the watch.
	for _, tc := range []struct {
		name string
		last *record.Record
	}{
		{"a success", okRec(19*s, 0, 100*ms, time.Second)},
		{"a timeout after the headers", func() *record.Record {
			r := failRec(19*s, record.Timeout)
			r.HeadersNs = r.ScheduledNs + int64(ms)
			return r
		}()},
	} {
		u := NewUnusable("")
		u.Add(tc.last)
		for i := range 30 {
			u.Add(refused(time.Duration(i) * s))
		}
		if why := u.Stop(60 * s); why != "" {
			t.Errorf("%s first: %s", tc.name, why)
		}
	}
	// Twenty requests of mixed causes, in 2 s: each named, the most
	// common first.
	u = NewUnusable("")
	for i := range 20 {
		at := time.Duration(i) * 100 * ms
		r := refused(at)
		if i%4 == 0 {
			r = failRec(at, record.HTTPError)
			r.Status, r.Error = 401, "status 401"
		}
		u.Add(r)
	}
	if why := u.Stop(2 * s); why != "the target is unusable: the first 20 requests all failed: target unreachable (connection refused) ×15, not authorized (status 401) ×5" {
		t.Errorf("mixed: %q", why)
	}
	// An API the target does not serve: the path and the --api are named.
	u = NewUnusable("POST /v1/rerank (--api rerank)")
	for i := range 20 {
		r := failRec(time.Duration(i)*100*ms, record.HTTPError)
		r.Status, r.Error = 404, "status 404"
		u.Add(r)
	}
	if why := u.Stop(2 * s); why != "the target is unusable: the first 20 requests all failed: not an inference endpoint (status 404); POST /v1/rerank (--api rerank) answered 404: the target does not serve this API at this URL" {
		t.Errorf("404: %q", why)
	}
}

// The console explains goodput/s above completed/s only where the gap is
// more than the requests that straddle a phase's edges: > 5% and
// > 0.5 req/s, in a measured phase.
func TestArrivalVsCompletion(t *testing.T) {
	phase := func(name string, excluded bool, goodput, completed float64) analyze.PhaseResult {
		p := analyze.PhaseResult{Name: name, Excluded: excluded}
		p.GoodputRPS, p.CompletedRPS = goodput, completed
		return p
	}
	tests := []struct {
		name   string
		phases []analyze.PhaseResult
		want   string // the phase named, or "" for no line
	}{
		{"burst finished after it ended", []analyze.PhaseResult{phase("baseline", false, 5, 5), phase("burst", false, 7.7, 6.7)}, "burst"},
		{"within 5%", []analyze.PhaseResult{phase("burst", false, 10.4, 10)}, ""},
		{"within 0.5 req/s", []analyze.PhaseResult{phase("burst", false, 1.4, 1)}, ""},
		{"excluded warmup", []analyze.PhaseResult{phase("warmup", true, 6, 3.9)}, ""},
		{"no phases", nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ArrivalVsCompletion(tc.phases)
			switch {
			case tc.want == "" && got != "":
				t.Errorf("got %q, want no line", got)
			case tc.want != "" && !strings.Contains(got, tc.want+"'s good requests finished after it ended"):
				t.Errorf("got %q, want a line naming %s", got, tc.want)
			}
		})
	}
}
