package run

import (
	"context"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/surge-bench/surge/internal/field"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/schedule"
	"github.com/surge-bench/surge/internal/workload"
)

func ptr[T any](v T) *T { return &v }

// budgetRun executes a 60 s run at 10 req/s with the options, in virtual
// time (the engine model) or live against the simulator over HTTP on an
// in-memory network inside a synctest bubble (call it inside one).
func budgetRun(t *testing.T, o Options, virtual bool) (*Env, *Result) {
	t.Helper()
	var env *Env
	if virtual {
		var err error
		if env, err = Prepare(context.Background(), o, true, nil, nil, "test"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { env.Close() })
	} else {
		env = bubbleEnv(t, o, nil)
	}
	res, err := env.Execute(context.Background(), Spec{Name: "r", Dir: testDir(t), Command: "test", Plan: onePhase(10, time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	return env, res
}

func outputTokens(recs []record.Record) (n int64) {
	for i := range recs {
		n += int64(recs[i].OutputTokens)
	}
	return n
}

// unusedInFlight is what the requests still in flight at the stop left
// unused of their max_tokens: the most by which a reservation budget can
// end below its limit, besides the next request's max_tokens.
func unusedInFlight(recs []record.Record, stop time.Duration) (n int64) {
	for i := range recs {
		if r := &recs[i]; r.ScheduledNs < int64(stop) && r.DoneNs > int64(stop) {
			n += int64(r.MaxTokens - r.OutputTokens)
		}
	}
	return n
}

// checkTokenStop asserts the budget stop of --max-output-tokens 5000:
// partial with the reason, and the tokens spent within
//
//	5000 − (next max_tokens + unused reservations in flight) ≤ spent ≤ 5000
//
// The upper bound is the rule's promise (every request in flight had its
// max_tokens reserved, and the engine never passes max_tokens); the
// lower one is what the rule can leave unspent.
func checkTokenStop(t *testing.T, env *Env, res *Result, nextMax int) {
	t.Helper()
	spent := outputTokens(recordsOf(t, res))
	if !res.Partial || !strings.HasPrefix(res.PartialWhy, "budget: ") {
		t.Fatalf("partial %v why %q", res.Partial, res.PartialWhy)
	}
	if res.Manifest.PartialWhy != res.PartialWhy || !res.Manifest.Partial {
		t.Errorf("manifest partial %v %q", res.Manifest.Partial, res.Manifest.PartialWhy)
	}
	if res.StoppedAt <= 0 || res.StoppedAt >= time.Minute || res.Plan.Duration() != res.StoppedAt {
		t.Errorf("stopped at %s, plan cut to %s", res.StoppedAt, res.Plan.Duration())
	}
	slack := int64(nextMax) + unusedInFlight(recordsOf(t, res), res.StoppedAt)
	t.Logf("spent %d of 5000 output tokens in %d requests, stopped at %s; slack allowed %d", spent, res.Count(), res.StoppedAt, slack)
	if spent > 5000 || spent < 5000-slack {
		t.Errorf("spent %d output tokens, want within [5000 − %d, 5000]", spent, slack)
	}
	if res.Spend.OutputTokens != spent || env.Spent().OutputTokens != spent || res.Spend.Requests != res.Count() {
		t.Errorf("spend %+v, command %+v; records: %d tokens, %d requests", res.Spend, env.Spent(), spent, res.Count())
	}
	// The reason shows the stop adding up (review14 finding 5): spent +
	// reserved at the stop fit, with the next request's need they do not.
	m := regexp.MustCompile(`^budget: at the stop (\d+) output tokens spent \+ (\d+) reserved by \d+ requests? in flight; the next request needed (\d+) \(--max-output-tokens 5000\); finally spent (\d+)$`).FindStringSubmatch(res.PartialWhy)
	if m == nil {
		t.Fatalf("reason %q", res.PartialWhy)
	}
	n := func(i int) int64 { v, _ := strconv.ParseInt(m[i], 10, 64); return v }
	if at, held, next := n(1), n(2), n(3); at+held > 5000 || at+held+next <= 5000 || next > int64(nextMax) || at > spent || n(4) != spent {
		t.Errorf("reason %q does not add up: %d spent + %d reserved + %d next vs 5000, finally %d of %d spent", res.PartialWhy, at, held, next, n(4), spent)
	}
	if env.BudgetStop() != res.PartialWhy || env.BudgetExhausted() == "" {
		t.Errorf("env: stop %q, exhausted %q", env.BudgetStop(), env.BudgetExhausted())
	}
}

// --max-output-tokens 5000 with answers of exactly 100 tokens
// (--ignore-eos): every reservation is spent, so the run ends at exactly
// 5000 tokens — 50 requests, the 51st (at 5.0 s) not sent — in virtual
// time and live over HTTP alike.
func TestBudgetOutputTokensExact(t *testing.T) {
	o := quietOptions()
	o.IgnoreEOS, o.OutputTokens, o.MaxOutputTokens = true, workload.FixedLength(100), ptr[int64](5000)
	check := func(t *testing.T, virtual bool) {
		env, res := budgetRun(t, o, virtual)
		checkTokenStop(t, env, res, 100)
		if res.Count() != 50 || outputTokens(recordsOf(t, res)) != 5000 || res.StoppedAt != 5*time.Second {
			t.Errorf("%d records, %d tokens, stopped at %s; want 50, 5000, 5s", res.Count(), outputTokens(recordsOf(t, res)), res.StoppedAt)
		}
	}
	t.Run("virtual", func(t *testing.T) { check(t, true) })
	t.Run("live", func(t *testing.T) { synctest.Test(t, func(t *testing.T) { check(t, false) }) })
}

// With the chat profile's natural answers (shorter than their max_tokens)
// the run ends below 5000 by no more than the reservations left unused in
// flight and the next request's max_tokens; never above.
func TestBudgetOutputTokensNatural(t *testing.T) {
	o := quietOptions()
	o.MaxOutputTokens = ptr[int64](5000)
	p, err := o.WorkloadProfile()
	if err != nil {
		t.Fatal(err)
	}
	check := func(t *testing.T, virtual bool) {
		env, res := budgetRun(t, o, virtual)
		checkTokenStop(t, env, res, p.MaxTokens)
	}
	t.Run("virtual", func(t *testing.T) { check(t, true) })
	t.Run("live", func(t *testing.T) { synctest.Test(t, func(t *testing.T) { check(t, false) }) })
}

// --max-requests 37: exactly 37 requests, then the schedule ends at the
// 38th arrival (3.7 s), partial with the reason.
func TestBudgetMaxRequests(t *testing.T) {
	o := quietOptions()
	o.MaxRequests = ptr[int64](37)
	check := func(t *testing.T, virtual bool) {
		env, res := budgetRun(t, o, virtual)
		if res.Count() != 37 || res.StoppedAt != 3700*time.Millisecond || !res.Partial || res.PartialWhy != "budget: 37 requests sent (--max-requests 37)" {
			t.Fatalf("%d records, stopped at %s, partial %v %q", res.Count(), res.StoppedAt, res.Partial, res.PartialWhy)
		}
		if env.Spent().Requests != 37 {
			t.Errorf("spent %+v", env.Spent())
		}
	}
	t.Run("virtual", func(t *testing.T) { check(t, true) })
	t.Run("live", func(t *testing.T) { synctest.Test(t, func(t *testing.T) { check(t, false) }) })
}

// --max-cost $0.01 at $2/$10 per M: the cost of the records' usage stays
// at or under it, and below it by less than two requests' reservations
// (answers of exactly 100 tokens, prompts of 200).
func TestBudgetMaxCost(t *testing.T) {
	o := quietOptions()
	o.IgnoreEOS, o.OutputTokens, o.PromptTokens = true, workload.FixedLength(100), workload.FixedLength(200)
	o.MaxCost, o.PriceInput, o.PriceOutput = ptr(0.01), ptr(2.0), ptr(10.0)
	check := func(t *testing.T, virtual bool) {
		env, res := budgetRun(t, o, virtual)
		var in, out int64
		var most float64
		for _, r := range recordsOf(t, res) {
			in, out = in+int64(r.PromptTokens), out+int64(r.OutputTokens)
			most = max(most, (float64(r.PromptTokens)*2+float64(r.OutputTokens)*10)/1e6)
		}
		cost := (float64(in)*2 + float64(out)*10) / 1e6
		m := regexp.MustCompile(`^budget: at the stop \$([0-9.]+) spent \+ \$([0-9.]+) reserved by \d+ requests? in flight; the next request needed \$([0-9.]+) \(--max-cost 0.01\); finally spent \$([0-9.]+)$`).FindStringSubmatch(res.PartialWhy)
		if !res.Partial || m == nil {
			t.Fatalf("partial %v %q", res.Partial, res.PartialWhy)
		}
		f := func(i int) float64 { v, _ := strconv.ParseFloat(m[i], 64); return v }
		if at, held, next := f(1), f(2), f(3); at+held+next <= 0.01 || f(4) != math.Round(cost*1e4)/1e4 {
			t.Errorf("reason %q does not add up to more than $0.01, or the final spend is not $%.4f", res.PartialWhy, cost)
		}
		if cost > 0.01 || cost < 0.01-2*most || in == 0 {
			t.Errorf("cost $%.6f of %d input + %d output tokens, want within [0.01 − 2 × %.6f, 0.01]", cost, in, out, most)
		}
		if s := env.Spent(); !s.Priced || s.Cost != cost {
			t.Errorf("spent %+v, want cost %g", s, cost)
		}
	}
	t.Run("virtual", func(t *testing.T) { check(t, true) })
	t.Run("live", func(t *testing.T) { synctest.Test(t, func(t *testing.T) { check(t, false) }) })
}

// One budget for the whole command: the second run of the same Env starts
// with what the first spent, stops after the rest, and then nothing is
// left for a third.
func TestBudgetSharedAcrossRuns(t *testing.T) {
	o := quietOptions()
	o.MaxRequests = ptr[int64](30)
	env, err := Prepare(context.Background(), o, true, nil, nil, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	first, err := env.Execute(context.Background(), Spec{Name: "a", Dir: testDir(t), Command: "test", Plan: onePhase(10, 2*time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if first.Count() != 20 || first.Partial || env.BudgetExhausted() != "" {
		t.Fatalf("first run: %d records, partial %v; exhausted %q", first.Count(), first.Partial, env.BudgetExhausted())
	}
	second, err := env.Execute(context.Background(), Spec{Name: "b", Dir: testDir(t), Command: "test", Plan: onePhase(10, 2*time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if second.Count() != 10 || !second.Partial || second.PartialWhy != "budget: 30 requests sent (--max-requests 30)" {
		t.Fatalf("second run: %d records, partial %v %q", second.Count(), second.Partial, second.PartialWhy)
	}
	if env.Spent().Requests != 30 || env.BudgetExhausted() == "" {
		t.Errorf("spent %+v, exhausted %q", env.Spent(), env.BudgetExhausted())
	}
}

// Without a budget nothing is metered but the spend, and prices alone
// are accepted (they price the estimate and the spend).
func TestBudgetPricesAlone(t *testing.T) {
	o := quietOptions()
	o.PriceInput, o.PriceOutput = ptr(0.5), ptr(1.5)
	env, res := budgetRun(t, o, true)
	if res.Partial || res.Count() != 600 {
		t.Fatalf("%d records, partial %v %q", res.Count(), res.Partial, res.PartialWhy)
	}
	s := env.Spent()
	if want := (float64(s.InputTokens)*0.5 + float64(s.OutputTokens)*1.5) / 1e6; !s.Priced || s.Cost != want || s.OutputTokens != outputTokens(recordsOf(t, res)) {
		t.Errorf("spent %+v, want cost %g", s, want)
	}
}

func TestBudgetValidate(t *testing.T) {
	cases := map[string]struct {
		set  func(o *Options)
		want []string // field: message prefix
	}{
		"max requests 0":      {func(o *Options) { o.MaxRequests = ptr[int64](0) }, []string{"max_requests: must be ≥ 1 request"}},
		"max requests < 0":    {func(o *Options) { o.MaxRequests = ptr[int64](-5) }, []string{"max_requests: must be ≥ 1 request"}},
		"max output tokens 0": {func(o *Options) { o.MaxOutputTokens = ptr[int64](0) }, []string{"max_output_tokens: must be ≥ 1 token"}},
		"max cost 0":          {func(o *Options) { o.MaxCost, o.PriceInput, o.PriceOutput = ptr(0.0), ptr(1.0), ptr(1.0) }, []string{"max_cost: must be > 0 USD"}},
		"max cost no prices": {func(o *Options) { o.MaxCost = ptr(1.0) }, []string{
			"price_input: required with --max-cost", "price_output: required with --max-cost"}},
		"max cost no output price": {func(o *Options) { o.MaxCost, o.PriceInput = ptr(1.0), ptr(0.0) }, []string{"price_output: required with --max-cost"}},
		"negative price":           {func(o *Options) { o.PriceOutput = ptr(-1.0) }, []string{"price_output: must be a price"}},
		"sessions": {func(o *Options) { o.Sessions, o.MaxRequests = true, ptr[int64](10) }, []string{
			"max_requests: does not apply with --sessions"}},
		"price alone":            {func(o *Options) { o.PriceInput = ptr(0.5) }, nil},
		"max cost at free input": {func(o *Options) { o.MaxCost, o.PriceInput, o.PriceOutput = ptr(1.0), ptr(0.0), ptr(2.0) }, nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := DefaultOptions()
			tc.set(&o)
			err := o.Validate()
			if tc.want == nil {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			es, ok := field.As(err)
			if !ok || len(es) != len(tc.want) {
				t.Fatalf("errors %v, want %q", err, tc.want)
			}
			for i, e := range es {
				if got := e.Field + ": " + e.Message; !strings.HasPrefix(got, tc.want[i]) {
					t.Errorf("error %d: %q, want it to start %q", i, got, tc.want[i])
				}
			}
		})
	}
}

// BenchmarkBudgetAdmit is what a budget adds per arrival on the
// dispatcher: the request's draws (Shape) and the reservation, and its
// release when the record comes back. Nothing is added per chunk.
func BenchmarkBudgetAdmit(b *testing.B) {
	o := quietOptions()
	o.MaxOutputTokens = ptr[int64](1 << 62)
	wcfg, err := o.WorkloadConfig()
	if err != nil {
		b.Fatal(err)
	}
	g, err := workload.New(wcfg)
	if err != nil {
		b.Fatal(err)
	}
	m := newMeter(&o)
	rec := record.New("x", 0, "main", 0)
	b.ReportAllocs()
	for i := range b.N {
		a := schedule.Arrival{Seq: int64(i), At: time.Duration(i)}
		prompt, maxTok := g.Shape(a)
		if !m.admit(a.Seq, a.At, prompt, maxTok) {
			b.Fatal("refused")
		}
		rec.Seq, rec.OutputTokens = a.Seq, maxTok
		m.done(&rec)
	}
}

// A closed loop over HTTP (a concurrency sweep's level) is metered too:
// with --max-requests 20 its 4 users send 20 requests in all, then stop;
// in virtual time the budget is refused before anything runs.
func TestBudgetClosedLoop(t *testing.T) {
	o := quietOptions()
	o.MaxRequests = ptr[int64](20)
	loop := schedule.ClosedLoop{Users: 4, Duration: 30 * time.Second, Phase: "c4"}
	synctest.Test(t, func(t *testing.T) {
		env := bubbleEnv(t, o, nil)
		res, err := env.Execute(context.Background(), Spec{Name: "c", Dir: testDir(t), Command: "test", Plan: loop.Plan(), Closed: &loop})
		if err != nil {
			t.Fatal(err)
		}
		if res.Count() != 20 || !res.Partial || res.PartialWhy != "budget: 20 requests sent (--max-requests 20)" || res.StoppedAt <= 0 {
			t.Fatalf("%d records, partial %v %q, stopped at %s", res.Count(), res.Partial, res.PartialWhy, res.StoppedAt)
		}
	})
	env, err := Prepare(context.Background(), o, true, nil, nil, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	if err := env.CheckBudget(true); err == nil || !strings.Contains(err.Error(), "does not apply to a concurrency sweep with --simulate") {
		t.Errorf("virtual closed loop: %v", err)
	}
}
