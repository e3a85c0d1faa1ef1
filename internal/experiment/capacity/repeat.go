package capacity

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/experiment"
	"github.com/surge-bench/surge/internal/judge"
	"github.com/surge-bench/surge/internal/report"
	"github.com/surge-bench/surge/internal/run"
	"github.com/surge-bench/surge/internal/rundir"
)

// repeated is `surge capacity --repeat N`: N whole searches, each into
// d/rep-k with its own steps, step table, capacity.json and report.html,
// the settle gate before each, rep k's steps seeded with the seed + k − 1.
// d's results table has one row per search — its sustainable step, the
// highest that met the SLO — then the pooled row (those steps' records
// analysed together, analyze.Pool) and the spread lines, the sustainable
// rate's first: one value per search, so its distribution is the result,
// never a merged percentile.
func repeated(ctx context.Context, env *run.Env, c *Config, d *rundir.Dir, w io.Writer) (experiment.Outcome, error) {
	n := c.Repeat
	gate := &experiment.Gate{Env: env, Timeout: max(c.SettleTimeout, DefaultLevelSettleTimeout), Out: w}
	var searches []*Result
	out := experiment.Outcome{Verdict: judge.Pass, Dir: d.Path()}
	for k := 1; k <= n && ctx.Err() == nil; k++ {
		if !env.Virtual {
			waited, note, err := gate.Wait(ctx)
			if err != nil {
				return out, err
			}
			fmt.Fprintf(w, "settle before search %d: %s (%s)\n", k, waited.Round(100*time.Millisecond), note)
		}
		sub, err := d.Sub(experiment.RepDir(k))
		if err != nil {
			return out, err
		}
		cc := *c
		cc.rep, cc.repeats = k, n
		fmt.Fprintf(w, "\nsearch %d of %d (seed %d): writing %s\n", k, n, env.Opts.Seed+int64(k-1), sub.Path())
		cr, err := Search(ctx, env, &cc, sub, w)
		if err != nil {
			return out, err
		}
		if err := WriteReports(env, &cc, sub, cr); err != nil {
			return out, err
		}
		printSearchFound(w, k, n, cr)
		searches = append(searches, cr)
		out.Verdict = judge.Worse(out.Verdict, experiment.OutcomeOf(cr.SustainableRPS > 0 && !cr.GeneratorLimited))
		out.Partial = out.Partial || cr.Partial
		if cr.Partial {
			break
		}
	}
	out.Partial = out.Partial || ctx.Err() != nil
	if err := writeRepeated(env, c, d, searches, w); err != nil {
		return out, err
	}
	printCombined(w, &env.Opts, c, searches, out.Partial)
	fmt.Fprintf(w, "\nreports: %s  %s\n", filepath.Join(d.Path(), "results.md"), filepath.Join(d.Path(), "report.html"))
	var all []*run.Result
	for _, cr := range searches {
		for _, s := range cr.Steps {
			all = append(all, s.Result)
		}
	}
	out.Unusable = len(all) > 0 && !experiment.AnyOK(all...) && !out.Partial
	out.Meaning = fmt.Sprintf("a sustainable rate was found in every one of the %d searches", len(searches))
	if out.Verdict != judge.Pass {
		out.Meaning = "some search found no sustainable rate, or could not send the load"
	}
	return out, nil
}

// printSearchFound is one search's answer in a repeated search: its
// sustainable rate, without a suggested baseline — that comes from the
// searches together (printCombined).
func printSearchFound(w io.Writer, k, n int, cr *Result) {
	fmt.Fprintln(w)
	switch {
	case cr.Partial:
		fmt.Fprintf(w, "search %d of %d: %s\n", k, n, partialFound(cr))
	case cr.SustainableRPS == 0:
		fmt.Fprintf(w, "search %d of %d: no step met the SLO.\n", k, n)
	case cr.Bounded:
		fmt.Fprintf(w, "search %d of %d: sustainable %s req/s (the lowest failing step was %s req/s).\n", k, n, experiment.FmtRate(cr.SustainableRPS), experiment.FmtRate(cr.LowestFailingRPS))
	default:
		fmt.Fprintf(w, "search %d of %d: sustainable at least %s req/s (no step failed).\n", k, n, experiment.FmtRate(cr.SustainableRPS))
	}
}

// combined is the answer of N searches together: the nearest-rank median
// of their sustainable rates (the ⌈N/2⌉-th smallest, as every repeat's
// median) and their range, over the searches that found one.
type combined struct {
	Median, Min, Max float64
	Found, None      int // searches with and without a sustainable rate
	Rates            []string
}

func combine(searches []*Result) combined {
	var vals []analyze.RunValue
	var cb combined
	for _, cr := range searches {
		if cr.SustainableRPS > 0 && !cr.Partial {
			vals = append(vals, analyze.RunValue{V: cr.SustainableRPS})
			cb.Found++
			cb.Rates = append(cb.Rates, experiment.FmtRate(cr.SustainableRPS))
		} else if !cr.Partial {
			cb.None++
			cb.Rates = append(cb.Rates, "none")
		}
	}
	if len(vals) > 0 {
		sp := analyze.SpreadOf(vals, 0)
		cb.Median, cb.Min, cb.Max = sp.Median, sp.Min, sp.Max
	}
	return cb
}

// printCombined ends `surge capacity --repeat N`: the searches' combined
// answer — the median sustainable rate and its spread, the suggested
// baseline from the median — and the Verdicts block, one line per search
// and one for all of them.
func printCombined(w io.Writer, o *run.Options, c *Config, searches []*Result, partial bool) {
	cb := combine(searches)
	fmt.Fprintln(w)
	switch {
	case cb.Found == 0:
		fmt.Fprintf(w, "Sustainable capacity over %d searches: none found (%s).\n", len(searches), strings.Join(cb.Rates, ", "))
	default:
		spread := ""
		if cb.Median > 0 {
			spread = fmt.Sprintf(", a spread of %.0f%% of the median", 100*(cb.Max-cb.Min)/cb.Median)
		}
		fmt.Fprintf(w, "Sustainable capacity over %d searches: median %s req/s (searches %s; min %s, max %s%s).\n", cb.Found+cb.None,
			experiment.FmtRate(cb.Median), strings.Join(cb.Rates, ", "), experiment.FmtRate(cb.Min), experiment.FmtRate(cb.Max), spread)
		if cb.None > 0 {
			fmt.Fprintf(w, "WARNING: %d of %d searches found no sustainable rate; the median is over the others.\n", cb.None, cb.Found+cb.None)
		}
	}
	if partial {
		fmt.Fprintln(w, "PARTIAL: the searches were cut short (Ctrl-C or the budget); the combined answer is over the finished searches only, and not final.")
	} else if cb.Found > 0 {
		base := experiment.RoundRate(c.BaselineFraction * cb.Median)
		fmt.Fprintf(w, "Suggested baseline: %s req/s (%g × the median), e.g. surge burst --baseline-rps %s --capacity-rps %s, with this search's workload flags\n",
			experiment.FmtRate(base), c.BaselineFraction, experiment.FmtRate(base), experiment.FmtRate(cb.Median))
	}
	var lines []experiment.VerdictLine
	for i, cr := range searches {
		l := experiment.VerdictLine{Scope: fmt.Sprintf("search %d", i+1), Label: "SLO", Outcome: experiment.OutcomeOf(cr.SustainableRPS > 0 && !cr.GeneratorLimited)}
		switch {
		case cr.Partial:
			l.Status, l.Detail = "PARTIAL", partialFound(cr)
		case cr.GeneratorLimited:
			l.Status, l.Detail = "GENERATOR-LIMITED", cr.Note
		case cr.SustainableRPS == 0:
			l.Detail = "no step met the SLO"
		default:
			l.Detail = "sustainable " + experiment.FmtRate(cr.SustainableRPS) + " req/s"
			if cr.LowestFailingRPS > 0 {
				l.Detail += ", lowest failing " + experiment.FmtRate(cr.LowestFailingRPS) + " req/s"
			}
		}
		lines = append(lines, l)
	}
	scope := fmt.Sprintf("all %d searches", len(searches))
	if len(searches) < c.Repeat {
		scope = fmt.Sprintf("the %d of %d searches run", len(searches), c.Repeat)
	}
	all := experiment.VerdictLine{Scope: scope, Label: "SLO", Outcome: experiment.OutcomeOf(cb.Found > 0 && cb.None == 0), Partial: partial}
	if cb.Found > 0 {
		all.Detail = fmt.Sprintf("median sustainable %s req/s (min %s, max %s)", experiment.FmtRate(cb.Median), experiment.FmtRate(cb.Min), experiment.FmtRate(cb.Max))
	} else {
		all.Detail = "no search found a sustainable rate"
	}
	if partial && all.Outcome != judge.Pass {
		all.Status = "PARTIAL"
	}
	lines = append(lines, all)
	var why []string
	if partial {
		why = append(why, "the searches were cut short: the answer is not final")
	}
	experiment.PrintVerdicts(w, "SLO "+experiment.SLOText(o.Judging)+"; the searches' sustainable rates", lines, why)
}

// sustainableStep is the search's highest passing step; nil when none
// passed.
func sustainableStep(cr *Result) *Step {
	var best *Step
	for i := range cr.Steps {
		if st := &cr.Steps[i]; st.Pass && (best == nil || st.Rate > best.Rate) {
			best = st
		}
	}
	return best
}

// writeRepeated writes d's results table and report.html over the
// searches and prints the table.
func writeRepeated(env *run.Env, c *Config, d *rundir.Dir, searches []*Result, w io.Writer) error {
	o := &env.Opts
	t := report.Table{Title: "surge capacity: " + env.TargetName() + " — one row per search (its sustainable step), then the pooled row", Meta: experiment.HTMLMeta(env),
		Omit: report.BurstColumns, PhaseHead: "search"}
	t.Meta = append(t.Meta, report.KV{Key: "repeats", Value: fmt.Sprintf("%d whole capacity searches (rep k seeded with %d + k − 1), each in %s/rep-k", c.Repeat, o.Seed, d.Path())})
	var rows []report.Row
	var sustained []analyze.RunValue
	var steps []*run.Result
	for i, cr := range searches {
		k := i + 1
		scope := fmt.Sprintf("rep %d", k)
		sustained = append(sustained, analyze.RunValue{V: cr.SustainableRPS})
		var row report.Row
		if st := sustainableStep(cr); st != nil {
			row = experiment.Row(st.Result, o, stepPhase)
			row.Phase = st.Name
			row.SentRPS = achievedRPS(st)
			steps = append(steps, st.Result)
			t.Verdicts = append(t.Verdicts, experiment.SLOVerdicts(scope+" "+st.Name, st.Verdict)...)
		} else {
			row = report.Row{Model: o.Model, Workload: o.WorkloadName(), Deployment: o.Deployment, Phase: noStep}
			sustained[i] = analyze.RunValue{V: math.NaN()}
		}
		experiment.NoBurst(&row)
		row.Rep, row.Repeats = k, len(searches)
		rows = append(rows, row)
		t.Notes = append(t.Notes, fmt.Sprintf("%s: sustainable %s req/s, lowest failing %s req/s, %d steps%s", scope,
			orNone(cr.SustainableRPS), orNone(cr.LowestFailingRPS), len(cr.Steps), partialText(cr)))
	}
	t.Rows = append(t.Rows, rows...)
	if cb := combine(searches); cb.Found > 0 {
		t.Notes = append([]string{fmt.Sprintf("combined: median sustainable %s req/s over the searches that found one (min %s, max %s; the nearest-rank median); suggested baseline %s req/s (%g × the median)",
			experiment.FmtRate(cb.Median), experiment.FmtRate(cb.Min), experiment.FmtRate(cb.Max), experiment.FmtRate(experiment.RoundRate(c.BaselineFraction*cb.Median)), c.BaselineFraction)}, t.Notes...)
	}
	if len(searches) > 1 {
		sp := analyze.SpreadOf(sustained, uint64(o.Seed))
		t.Spreads = append(t.Spreads, sustainableSpread(sp))
		t.Spreads = append(t.Spreads, experiment.Spreads("sustainable step", rows, o.Seed)...)
		if len(steps) > 1 {
			if pooled, err := experiment.Pooled(env, steps); err != nil {
				t.Notes = append(t.Notes, "no pooled row: "+err.Error())
			} else {
				row := experiment.Row(pooled, o, stepPhase)
				experiment.NoBurst(&row)
				first := rows[slices.IndexFunc(rows, func(r report.Row) bool { return r.Phase != noStep })]
				experiment.PoolRow(&row, len(steps), first)
				row.Phase = "the sustainable steps together"
				if pooled.Virtual {
					row.SentRPS = report.Unavailable("virtual time: no load generator")
				}
				t.Rows = append(t.Rows, row)
				t.Notes = append(t.Notes, "pooled: the sustainable steps of the searches ran at different rates; their records merged say how the target held near its capacity, the sustainable rate itself is the spread line's distribution")
			}
		}
	}
	h := report.HTMLReport{Title: t.Title, Meta: t.Meta}
	ht := t
	ht.Meta = nil
	h.Tables = []report.Table{ht}
	if err := experiment.WriteReports(d, t, h); err != nil {
		return err
	}
	fmt.Fprintln(w)
	report.WriteTerminalTables(w, report.Table{Title: t.Title, Rows: t.Rows, Omit: t.Omit, PhaseHead: t.PhaseHead, Spreads: t.Spreads}, filepath.Join(d.Path(), "results.md"))
	return nil
}

// sustainableSpread is the spread line of the searches' sustainable rates.
func sustainableSpread(s analyze.Spread) report.Spread {
	vals := make([]report.Opt, len(s.Values))
	for i, v := range s.Values {
		vals[i] = report.Val(v.V)
		if math.IsNaN(v.V) {
			vals[i] = report.Unavailable("no step met the SLO")
		}
	}
	sp := report.Spread{Scope: "searches", Metric: "sustainable_rps", Values: vals, Min: report.Val(s.Min), Median: report.Val(s.Median), Max: report.Val(s.Max),
		CILow: report.Unavailable(s.NoCI), CIHigh: report.Unavailable(s.NoCI)}
	if s.CI {
		sp.CILow, sp.CIHigh, sp.CILevel, sp.Resamples = report.Val(s.CILow), report.Val(s.CIHigh), s.CILevel, s.Resample
	}
	return sp
}

// noStep is the step column of a search in which no step met the SLO.
const noStep = "no step met the SLO"

func orNone(v float64) string {
	if v == 0 {
		return "none"
	}
	return experiment.FmtRate(v)
}

func partialText(cr *Result) string {
	if cr.Partial {
		return " (PARTIAL: " + cmp.Or(cr.PartialWhy, "interrupted") + ")"
	}
	return ""
}
