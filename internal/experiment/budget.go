package experiment

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/report"
	"github.com/surge-bench/surge/internal/run"
	"github.com/surge-bench/surge/internal/schedule"
	"github.com/surge-bench/surge/internal/workload"
)

// Estimate is what a planned experiment would spend: the requests its
// schedules send and their tokens, drawn exactly as the runs will draw
// them (the same seed, arrivals and workload; package run, budget.go).
type Estimate struct {
	Requests     int64
	InputTokens  int64 // Σ intended prompt tokens
	OutputTokens int64 // Σ max_tokens: the output if every answer runs to its cap
	IgnoreEOS    bool  // answers run to max_tokens, so OutputTokens is the output expected
}

// EstimatePlanned adds up the planned runs: the arrivals of each
// (schedule.Arrivals, with its rep's seed), and for each arrival the intended prompt tokens and max_tokens
// the run's workload gives it (with --sessions, workload.Summarize's
// counts of every turn).
func EstimatePlanned(o *run.Options, runs []PlannedRun) (Estimate, error) {
	wcfg, sess, err := o.WorkloadPreview()
	if err != nil {
		return Estimate{}, &run.ConfigError{Err: err}
	}
	est := Estimate{IgnoreEOS: o.IgnoreEOS}
	for _, r := range runs {
		plan, err := o.SessionPlan(r.Plan)
		if err != nil {
			return est, &run.ConfigError{Err: err}
		}
		rcfg := wcfg // a repeat draws its workload with its own seed too
		rcfg.Seed = r.Seed(wcfg.Seed)
		gen, err := workload.New(rcfg)
		if err != nil {
			return est, &run.ConfigError{Err: err}
		}
		if sess != nil {
			arrivals, err := schedule.Build(plan, r.Seed(o.Seed))
			if err != nil {
				return est, &run.ConfigError{Err: err}
			}
			s, err := workload.Summarize(rcfg, sess, arrivals)
			if err != nil {
				return est, &run.ConfigError{Err: err}
			}
			est.Requests += s.Requests
			est.InputTokens += s.Prompt.Sum()
			est.OutputTokens += s.MaxTokens.Sum()
			continue
		}
		// One arrival at a time: a long run's schedule (56 B an arrival)
		// is not held for a count.
		arrivals, err := schedule.Arrivals(plan, r.Seed(o.Seed))
		if err != nil {
			return est, &run.ConfigError{Err: err}
		}
		for a := range arrivals {
			prompt, maxTok := gen.Shape(a)
			est.Requests++
			est.InputTokens += int64(prompt)
			est.OutputTokens += int64(maxTok)
		}
	}
	return est, nil
}

// Text is the estimate in one line, e.g. "planned: ~4,820 requests,
// ~1.1 M input + ≤ 0.7 M output tokens (max_tokens), est. ≤ $1.23 at
// $0.50/$1.50 per M"; without both prices the tokens only. Without
// --ignore-eos the output and the cost are upper bounds: an answer may
// end before its max_tokens.
func (e Estimate) Text(p run.Prices) string {
	out, bound := "~", "est. "
	tail := ""
	if !e.IgnoreEOS {
		out, bound, tail = "≤ ", "est. ≤ ", " (max_tokens; answers that end sooner cost less)"
	}
	s := fmt.Sprintf("planned: ~%s requests, ~%s input + %s%s output tokens%s", analyze.Thousands(e.Requests), Tokens(e.InputTokens), out, Tokens(e.OutputTokens), tail)
	if p.Both() {
		s += fmt.Sprintf(", %s%s at %s", bound, run.USD(p.Cost(e.InputTokens, e.OutputTokens)), PriceText(p))
	}
	return s
}

// PrintEstimate prints the planned experiment's estimate, one line, and
// the budget when one is set.
func PrintEstimate(w io.Writer, o *run.Options, runs []PlannedRun) error {
	est, err := EstimatePlanned(o, runs)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, est.Text(o.Prices()))
	if b := BudgetText(o.Budget); b != "" {
		fmt.Fprintf(w, "budget: %s for the whole command; the run stops before passing it (no new arrivals, requests in flight finish)\n", b)
	}
	return nil
}

// BudgetText names the budgets set, e.g. "--max-output-tokens 5000", ""
// for none.
func BudgetText(o run.Budget) string {
	var parts []string
	if p := o.MaxRequests; p != nil {
		parts = append(parts, "--max-requests "+strconv.FormatInt(*p, 10))
	}
	if p := o.MaxOutputTokens; p != nil {
		parts = append(parts, "--max-output-tokens "+strconv.FormatInt(*p, 10))
	}
	if p := o.MaxCost; p != nil {
		parts = append(parts, "--max-cost "+strconv.FormatFloat(*p, 'f', -1, 64))
	}
	return strings.Join(parts, ", ")
}

// PriceWarning is the warning for one price given without the other —
// no cost can be computed, so it would go unused without a word — or ""
// when both or neither are given.
func PriceWarning(o run.Budget) string {
	p := o.Prices()
	given, missing := "--price-input", "--price-output"
	switch {
	case p.In == p.Out:
		return ""
	case p.Out:
		given, missing = missing, given
	}
	return fmt.Sprintf("warning: %s is set without %s: no cost is computed, and %s is unused (give both; 0 for tokens that are free)", given, missing, given)
}

// PriceText is "$0.50/$1.50 per M" (input/output, USD per million tokens).
func PriceText(p run.Prices) string {
	f := func(v float64) string { return "$" + strconv.FormatFloat(v, 'f', 2, 64) }
	if p.Input < 0.01 && p.Input > 0 || p.Output < 0.01 && p.Output > 0 {
		f = func(v float64) string { return "$" + strconv.FormatFloat(v, 'f', -1, 64) }
	}
	return f(p.Input) + "/" + f(p.Output) + " per M"
}

// SpendText is what the command spent, e.g. "spent: 27 requests, 17.9 k
// input + 3.0 k output tokens, $0.0134 at $0.50/$1.50 per M".
func SpendText(s run.Spend, p run.Prices) string {
	t := fmt.Sprintf("spent: %s requests, %s input + %s output tokens", analyze.Thousands(s.Requests), Tokens(s.InputTokens), Tokens(s.OutputTokens))
	if p.Both() {
		t += fmt.Sprintf(", %s at %s", run.USD(s.Cost), PriceText(p))
	}
	return t
}

// PrintSpend prints what the command spent and, when a budget is set,
// whether it stopped the command. Nothing without a budget or a price.
func PrintSpend(w io.Writer, env *run.Env) {
	o := &env.Opts
	p := o.Prices()
	if !env.Metered() || !o.Budgeted() && !p.In && !p.Out {
		return
	}
	fmt.Fprintln(w, SpendText(env.Spent(), p)+" (from the responses' usage)")
	if !o.Budgeted() {
		return
	}
	if why := env.BudgetStop(); why != "" {
		fmt.Fprintf(w, "budget %s: stopped the command — %s\n", BudgetText(o.Budget), why)
		return
	}
	fmt.Fprintf(w, "budget %s: not reached\n", BudgetText(o.Budget))
}

// spendMeta is the results tables' line of what the command spent (with
// a budget or a price set), and whether the budget stopped it; in
// results.json each line has its numbers in "data" (record.Spent,
// record.Budget).
func spendMeta(env *run.Env) []report.KV {
	o := &env.Opts
	p := o.Prices()
	if !env.Metered() || !o.Budgeted() && !p.In && !p.Out { // a re-rendered run's spend is not the command's
		return nil
	}
	kv := []report.KV{{Key: "spent", Value: strings.TrimPrefix(SpendText(env.Spent(), p), "spent: ") + " (from the responses' usage)", Data: o.SpentRecord(env.Spent())}}
	if o.Budgeted() {
		why := env.BudgetStop()
		v := BudgetText(o.Budget) + ": not reached"
		if why != "" {
			v = BudgetText(o.Budget) + ": stopped the command — " + why
		}
		kv = append(kv, report.KV{Key: "budget", Value: v, Data: o.BudgetRecord(why)})
	}
	return kv
}

// Tokens formats a token count: 950, 17.9 k, 1.1 M.
func Tokens(n int64) string {
	switch {
	case n >= 1_000_000:
		return strconv.FormatFloat(float64(n)/1e6, 'f', 1, 64) + " M"
	case n >= 10_000:
		return strconv.FormatFloat(float64(n)/1e3, 'f', 1, 64) + " k"
	}
	return strconv.FormatInt(n, 10)
}
