package run

import (
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/surge-bench/surge/internal/field"
	"github.com/surge-bench/surge/internal/record"
)

// A budget caps what a whole command may spend: requests sent
// (Options.MaxRequests), output tokens generated (MaxOutputTokens) and
// dollars (MaxCost, at PriceInput and PriceOutput per million tokens). An
// experiment of several runs shares one budget across them; a run that
// reaches it stops and the experiment starts no further run.
//
// The rule, the same in a live run and in virtual time: before an arrival
// is sent, its cost is reserved — one request, its max_tokens as output
// tokens, and
//
//	cost = (prompt tokens × PriceInput + max_tokens × PriceOutput) / 10⁶  USD
//
// — on top of what the finished requests spent (from their usage) and
// what the requests in flight hold reserved. The first arrival whose
// reservation does not fit ends the schedule: it and every later arrival
// are not sent, the requests in flight finish normally, and the run is
// partial with the reason. When a request finishes, its reservation is
// replaced by what its usage says it spent. As long as the server honours
// max_tokens, a run therefore never passes an output-token or cost budget;
// it ends below it by at most what the requests in flight at the stop left
// unused of their max_tokens (0 with --ignore-eos), plus the next
// request's reservation. No stream is cut: every record is a whole
// measurement. docs/method.md "A load test has a bill" gives the reasons
// and the overshoot measured with the other rules.
//
// A request is one arrival sent, whatever its retries (a generator drop
// is not one). Spent tokens are the records' usage: prompt_tokens as the
// server reported them (0 when a response had no usage, so a cost is then
// a lower bound) and output_tokens (usage, or the counted chunks).

// Spend is what requests spent: counted from their records' usage.
type Spend struct {
	Requests     int64 `json:"requests"`      // requests sent (generator drops excluded)
	InputTokens  int64 `json:"input_tokens"`  // Σ usage prompt_tokens
	OutputTokens int64 `json:"output_tokens"` // Σ usage completion_tokens (or counted chunks)
	// Cost is the cost at the prices, USD; meaningful only when Priced.
	Cost   float64 `json:"cost_usd"`
	Priced bool    `json:"priced"` // both prices were given
}

// Prices are the prices of tokens, USD per million.
type Prices struct {
	Input, Output float64 // USD per million input (prompt) and output tokens
	In, Out       bool    // the price was given
}

// Prices is the options' token prices.
func (o *Budget) Prices() Prices {
	var p Prices
	if o.PriceInput != nil {
		p.Input, p.In = *o.PriceInput, true
	}
	if o.PriceOutput != nil {
		p.Output, p.Out = *o.PriceOutput, true
	}
	return p
}

// Both reports whether both prices were given, so that a cost can be
// computed.
func (p Prices) Both() bool { return p.In && p.Out }

// Cost is the cost of input and output tokens, USD (a missing price
// counts 0).
func (p Prices) Cost(input, output int64) float64 {
	return (float64(input)*p.Input + float64(output)*p.Output) / 1e6
}

// Budgeted reports whether a budget limits the command.
func (o *Budget) Budgeted() bool {
	return o.MaxRequests != nil || o.MaxOutputTokens != nil || o.MaxCost != nil
}

// validateBudget checks the budget and the prices. A price without a
// budget is accepted: it prices the estimate before and the spend after.
// --max-cost needs both prices (it names the one missing); a budget is
// > 0, since a budget of 0 would send nothing (leave it out for none).
func (o *Options) validateBudget(bad func(field, format string, a ...any)) {
	if p := o.MaxRequests; p != nil && *p < 1 {
		bad("max_requests", "must be ≥ 1 request (leave it out for no limit), got %d", *p)
	}
	if p := o.MaxOutputTokens; p != nil && *p < 1 {
		bad("max_output_tokens", "must be ≥ 1 token (leave it out for no limit), got %d", *p)
	}
	price := func(key string, p *float64) {
		if p != nil && (!(*p >= 0) || math.IsInf(*p, 0) || *p > 1e6) {
			bad(key, "must be a price in USD per million tokens, 0..1000000, got %g", *p)
		}
	}
	price("price_input", o.PriceInput)
	price("price_output", o.PriceOutput)
	if p := o.MaxCost; p != nil {
		if !(*p > 0) || math.IsInf(*p, 0) {
			bad("max_cost", "must be > 0 USD (leave it out for no limit), got %g", *p)
		}
		if o.PriceInput == nil {
			bad("price_input", "required with --max-cost: USD per million input tokens (0 if input is free)")
		}
		if o.PriceOutput == nil {
			bad("price_output", "required with --max-cost: USD per million output tokens")
		}
	}
	if o.Sessions {
		for key, set := range map[string]bool{"max_requests": o.MaxRequests != nil, "max_output_tokens": o.MaxOutputTokens != nil, "max_cost": o.MaxCost != nil} {
			if set {
				bad(key, "does not apply with --sessions: a session's later turns are sent after its start and are not metered")
			}
		}
	}
}

// meter enforces the command's budget across its runs and adds up what
// they spent. Its methods are safe for concurrent use.
type meter struct {
	mu     sync.Mutex
	prices Prices
	maxReq int64   // 0 = none
	maxOut int64   // 0 = none
	maxUSD float64 // 0 = none

	spent Spend  // by the finished runs of the command
	stop  string // why the budget stopped the command; "" while it has not

	// The run under way: requests admitted, output tokens and cost
	// committed (finished requests' usage + reservations in flight),
	// the reservations in flight by seq, and the first refusal.
	sent    int64
	out     int64
	usd     float64
	held    map[int64]hold
	refused *refusal
}

type hold struct {
	out int64
	usd float64
}

type refusal struct {
	at   time.Duration // scheduled time of the first arrival not sent
	what string        // "requests", "output tokens", "cost"
	next hold          // what it would have reserved
	// At the refusal: what the command's finished requests had spent,
	// what the requests in flight held reserved, and how many they were.
	spent, held hold
	flying      int
}

func newMeter(o *Options) *meter {
	m := &meter{prices: o.Prices(), held: map[int64]hold{}}
	m.spent.Priced = m.prices.Both()
	if o.MaxRequests != nil {
		m.maxReq = *o.MaxRequests
	}
	if o.MaxOutputTokens != nil {
		m.maxOut = *o.MaxOutputTokens
	}
	if o.MaxCost != nil {
		m.maxUSD = *o.MaxCost
	}
	return m
}

// limited reports whether a budget is set.
func (m *meter) limited() bool { return m != nil && (m.maxReq > 0 || m.maxOut > 0 || m.maxUSD > 0) }

// key is the field of the first budget set, for an error about budgets.
func (m *meter) key() string {
	switch {
	case m.maxReq > 0:
		return "max_requests"
	case m.maxOut > 0:
		return "max_output_tokens"
	}
	return "max_cost"
}

// begin starts a run.
func (m *meter) begin() {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sent, m.out, m.usd, m.refused = 0, 0, 0, nil
	clear(m.held)
}

// admit reserves the request of arrival seq, scheduled at at, with the
// given prompt tokens and max_tokens; false when it does not fit in the
// budget, and then for every later arrival of the run.
func (m *meter) admit(seq int64, at time.Duration, prompt, maxTokens int) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.refused != nil {
		return false
	}
	h := hold{out: int64(maxTokens), usd: m.prices.Cost(int64(prompt), int64(maxTokens))}
	what := ""
	switch {
	case m.maxReq > 0 && m.spent.Requests+m.sent+1 > m.maxReq:
		what = "requests"
	case m.maxOut > 0 && m.spent.OutputTokens+m.out+h.out > m.maxOut:
		what = "output tokens"
	case m.maxUSD > 0 && m.spent.Cost+m.usd+h.usd > m.maxUSD:
		what = "cost"
	}
	if what != "" {
		f := &refusal{at: at, what: what, next: h, flying: len(m.held)}
		for _, r := range m.held {
			f.held.out += r.out
			f.held.usd += r.usd
		}
		f.spent = hold{out: m.spent.OutputTokens + m.out - f.held.out, usd: m.spent.Cost + m.usd - f.held.usd}
		m.refused = f
		return false
	}
	m.sent++
	m.out += h.out
	m.usd += h.usd
	m.held[seq] = h
	return true
}

// done replaces the reservation of rec's request by what it spent.
func (m *meter) done(rec *record.Record) {
	m.mu.Lock()
	defer m.mu.Unlock()
	h, ok := m.held[rec.Seq]
	if !ok {
		return
	}
	delete(m.held, rec.Seq)
	if rec.Outcome == record.GeneratorDrop { // admitted, then dropped by the in-flight cap: never sent
		m.sent--
		m.out -= h.out
		m.usd -= h.usd
		return
	}
	m.out += int64(rec.OutputTokens) - h.out
	m.usd += m.prices.Cost(int64(rec.PromptTokens), int64(rec.OutputTokens)) - h.usd
}

// refusedAt is the scheduled time of the run's first arrival the budget
// refused, if it refused one.
func (m *meter) refusedAt() (time.Duration, bool) {
	if m == nil {
		return 0, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.refused == nil {
		return 0, false
	}
	return m.refused.at, true
}

// end closes the run: what its records spent is added to the command's
// spend, and when the budget refused an arrival of the run, why — what
// was committed when the arrival was refused (spent, and reserved by the
// requests in flight), what it needed, the limit, then the final spend:
// "budget: at the stop 3900 output tokens spent + 1050 reserved by 9
// requests in flight; the next request needed 212 (--max-output-tokens
// 5000); finally spent 4553".
// tally is what the records spent (Tally), counted as they were read.
func (m *meter) end(tally Spend) (run Spend, why string) {
	if m == nil {
		return run, ""
	}
	run = tally
	run.Priced = m.prices.Both()
	run.Cost = m.prices.Cost(run.InputTokens, run.OutputTokens)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.spent.Requests += run.Requests
	m.spent.InputTokens += run.InputTokens
	m.spent.OutputTokens += run.OutputTokens
	m.spent.Cost = m.prices.Cost(m.spent.InputTokens, m.spent.OutputTokens)
	if f := m.refused; f != nil {
		s := m.spent
		switch f.what {
		case "requests":
			why = fmt.Sprintf("budget: %d requests sent (--max-requests %d)", s.Requests, m.maxReq)
		case "output tokens":
			why = fmt.Sprintf("budget: at the stop %d output tokens spent + %d reserved by %s; the next request needed %d (--max-output-tokens %d); finally spent %d",
				f.spent.out, f.held.out, inFlight(f.flying), f.next.out, m.maxOut, s.OutputTokens)
		default:
			why = fmt.Sprintf("budget: at the stop %s spent + %s reserved by %s; the next request needed %s (--max-cost %s); finally spent %s",
				USD(f.spent.usd), USD(f.held.usd), inFlight(f.flying), USD(f.next.usd), strconv.FormatFloat(m.maxUSD, 'f', -1, 64), USD(s.Cost))
		}
		m.stop = why
	}
	m.sent, m.out, m.usd, m.refused = 0, 0, 0, nil
	clear(m.held)
	return run, why
}

// Tally adds what one record spent: a request sent (a generator drop
// was not), its usage's prompt and completion tokens.
func (s *Spend) Tally(r *record.Record) {
	if r.Outcome == record.GeneratorDrop {
		return
	}
	s.Requests++
	s.InputTokens += int64(r.PromptTokens)
	s.OutputTokens += int64(r.OutputTokens)
}

// inFlight is "9 requests in flight", "1 request in flight".
func inFlight(n int) string {
	if n == 1 {
		return "1 request in flight"
	}
	return strconv.Itoa(n) + " requests in flight"
}

// exhausted says why no further run can send a request — a budget fully
// spent — or "" while one could. Asked before a run starts, a reason
// stops the command: it is the BudgetStop from then on.
func (m *meter) exhausted() (why string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	defer func() {
		if why != "" {
			m.stop = why
		}
	}()
	s := m.spent
	switch {
	case m.stop != "":
		return m.stop
	case m.maxReq > 0 && s.Requests >= m.maxReq:
		return fmt.Sprintf("budget: %d requests sent (--max-requests %d)", s.Requests, m.maxReq)
	case m.maxOut > 0 && s.OutputTokens >= m.maxOut:
		return fmt.Sprintf("budget: %d output tokens spent (--max-output-tokens %d)", s.OutputTokens, m.maxOut)
	case m.maxUSD > 0 && s.Cost >= m.maxUSD:
		return fmt.Sprintf("budget: %s spent (--max-cost %s)", USD(s.Cost), strconv.FormatFloat(m.maxUSD, 'f', -1, 64))
	}
	return ""
}

// SpentRecord is s in numbers, with the options' prices (record.Spent).
func (o *Budget) SpentRecord(s Spend) *record.Spent {
	r := &record.Spent{Requests: s.Requests, InputTokens: s.InputTokens, OutputTokens: s.OutputTokens, PriceInput: o.PriceInput, PriceOutput: o.PriceOutput}
	if s.Priced {
		c := s.Cost
		r.CostUSD = &c
	}
	return r
}

// BudgetRecord is the options' budget in numbers, stopped for why (""
// when it did not stop); nil without a budget.
func (o *Budget) BudgetRecord(why string) *record.Budget {
	if !o.Budgeted() {
		return nil
	}
	return &record.Budget{MaxRequests: o.MaxRequests, MaxOutputTokens: o.MaxOutputTokens, MaxCostUSD: o.MaxCost, Stopped: why != "", Reason: why}
}

// USD formats dollars with four significant decimals below $1 and cents
// above: $0.0123, $1.23.
func USD(v float64) string {
	if v < 1 {
		return "$" + strconv.FormatFloat(v, 'f', 4, 64)
	}
	return "$" + strconv.FormatFloat(v, 'f', 2, 64)
}

// Metered reports whether the Env meters its runs' spend: a prepared one
// does, a reloaded run's (surge report) does not.
func (e *Env) Metered() bool { return e.budget != nil }

// Spent is what the command's finished runs spent so far.
func (e *Env) Spent() Spend {
	if e.budget == nil {
		return Spend{}
	}
	e.budget.mu.Lock()
	defer e.budget.mu.Unlock()
	return e.budget.spent
}

// BudgetStop says why the budget stopped the command (a run was cut and
// no further run started), or "" when it did not.
func (e *Env) BudgetStop() string {
	if e.budget == nil {
		return ""
	}
	e.budget.mu.Lock()
	defer e.budget.mu.Unlock()
	return e.budget.stop
}

// BudgetExhausted says why the next run of an experiment must not start —
// the budget is spent, or stopped a run — or "" when it may. An
// experiment asks it before each run after the first; a reason is then
// the command's BudgetStop.
func (e *Env) BudgetExhausted() string {
	if e.budget == nil {
		return ""
	}
	return e.budget.exhausted()
}

// CheckBudget refuses a budget the run cannot keep: a closed loop in
// virtual time (virtual.Closed has no gate yet). A *ConfigError naming the
// budget's flag; nil when the budget applies (or there is none).
func (e *Env) CheckBudget(closed bool) error {
	if !e.Virtual || !closed || !e.budget.limited() {
		return nil
	}
	return configErr(&field.Error{Field: e.budget.key(), Message: "does not apply to a concurrency sweep with --simulate yet: drop --simulate (the closed loop over HTTP is metered) or sweep --rates"})
}

// ShareBudget makes e meter its runs against from's budget: one budget
// and one spend for a command that prepares an Env per part of it
// (burst --vary, one per value), so the parts add up and a stop in one
// ends the rest.
func (e *Env) ShareBudget(from *Env) { e.budget = from.budget }
