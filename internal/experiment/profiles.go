package experiment

import (
	"fmt"
	"io"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/report"
	"github.com/surge-bench/surge/internal/run"
)

// profileColumns are the columns of the by-profile table.
var profileColumns = []report.Column{
	{Key: "profile", Head: "profile", Kind: report.KindText},
	{Key: "planned_share", Head: "planned %", Kind: report.KindRatio, Desc: "the profile's weight / the mix's total weight"},
	{Key: "share", Head: "arrivals %", Kind: report.KindRatio, Desc: "the profile's part of the measured arrivals"},
	{Key: "arrivals", Head: "arrivals", Kind: report.KindCount},
	{Key: "ok", Head: "ok", Kind: report.KindCount},
	{Key: "error_rate", Head: "err %", Kind: report.KindRatio},
	{Key: "rejection_rate", Head: "429 %", Kind: report.KindRatio},
	{Key: "timeout_rate", Head: "timeout %", Kind: report.KindRatio},
	{Key: "goodput_ratio", Head: "goodput %", Kind: report.KindRatio, Desc: "arrivals that met the per-request deadline / arrivals"},
	{Key: "ttft_p50_ms", Head: "TTFT p50", Kind: report.KindMs, Desc: "time to first token from the scheduled arrival, ms, over this profile's requests"},
	{Key: "ttft_p95_ms", Head: "TTFT p95", Kind: report.KindMs},
	{Key: "ttft_p99_ms", Head: "TTFT p99", Kind: report.KindMs},
	{Key: "completion_p50_ms", Head: "completion p50", Kind: report.KindMs, Desc: "completion from the scheduled arrival, ms"},
	{Key: "completion_p99_ms", Head: "completion p99", Kind: report.KindMs},
	{Key: "prompt_tokens_p50", Head: "prompt tok p50", Kind: report.KindCount, Desc: "median prompt tokens of the ok requests, from the server's usage"},
	{Key: "output_tokens_p50", Head: "output tok p50", Kind: report.KindCount, Desc: "median output tokens of the ok requests, from the server's usage"},
}

// ProfileTable is the by-profile table of a run (one row per workload
// profile) over the named phase, or over the measured phases when phase is
// "", and false when the run had a single profile. scope prefixes the
// title ("5×" in a burst); o gives the planned shares of a mix.
func ProfileTable(scope string, res *run.Result, o *run.Options, phase string) (report.Grid, bool) {
	ps := res.Analysis.Profiles
	group := "measured phases"
	if phase != "" {
		p, _ := res.Analysis.Phase(phase)
		ps, group = p.Profiles, phase+" phase"
	}
	if len(ps) == 0 {
		return report.Grid{}, false
	}
	title := "By profile (" + group + ", every figure from the profile's own requests)"
	if scope != "" {
		title = scope + ": " + title
	}
	planned := plannedShares(o)
	t := report.Grid{Title: title, Columns: profileColumns}
	for i := range ps {
		p := &ps[i]
		ttft, comp := DistOpts(p.Latency.TTFTSchedule), DistOpts(p.Latency.E2ESchedule)
		share := report.Unavailable("not a profile of the mix")
		if len(planned) == 0 {
			share = report.Unavailable("no --mix")
		}
		if w, ok := planned[p.Name]; ok {
			share = report.Val(w)
		}
		tok := func(v int64) report.Cell {
			if v == 0 {
				return report.NumCell(report.Unavailable("no ok request reported usage"))
			}
			return Num(float64(v))
		}
		t.Rows = append(t.Rows, []report.Cell{
			report.TextCell(p.Name), report.NumCell(share), Num(p.Share), Num(float64(p.Offered)), Num(float64(p.Succeeded)),
			Num(p.ErrorRate), Num(p.RateLimitRate), Num(p.TimeoutRate), Num(p.GoodputRatio),
			report.NumCell(ttft[0]), report.NumCell(ttft[1]), report.NumCell(ttft[2]), report.NumCell(comp[0]), report.NumCell(comp[2]),
			tok(p.PromptTokensP50), tok(p.OutputTokensP50),
		})
	}
	return t, true
}

// plannedShares is each mix profile's weight / the total; empty without a
// mix.
func plannedShares(o *run.Options) map[string]float64 {
	out := map[string]float64{}
	sum := 0.0
	for _, p := range o.Mix {
		sum += p.Weight
	}
	for _, p := range o.Mix {
		out[p.Name] = p.Weight / sum
	}
	return out
}

// printProfiles writes the by-profile table of a run to the terminal;
// nothing for a single profile.
func printProfiles(w io.Writer, a *analyze.Result) {
	if len(a.Profiles) == 0 {
		return
	}
	fmt.Fprintln(w)
	g := report.Grid{Title: "by profile (measured phases):", Columns: []report.Column{
		{Key: "profile", Head: "profile", Kind: report.KindText},
		{Key: "arrivals", Head: "arrivals", Kind: report.KindCount},
		{Key: "share", Head: "share %", Kind: report.KindRatio},
		{Key: "ok", Head: "ok", Kind: report.KindCount},
		{Key: "error_rate", Head: "err %", Kind: report.KindRatio},
		{Key: "rejection_rate", Head: "429 %", Kind: report.KindRatio},
		{Key: "timeout_rate", Head: "timeout %", Kind: report.KindRatio},
		{Key: "goodput_ratio", Head: "good %", Kind: report.KindRatio},
		{Key: "ttft_p50_ms", Head: "TTFT p50", Kind: report.KindNumber},
		{Key: "ttft_p95_ms", Head: "p95", Kind: report.KindNumber},
		{Key: "ttft_p99_ms", Head: "p99", Kind: report.KindNumber},
		{Key: "completion_p50_ms", Head: "completion p50", Kind: report.KindNumber},
		{Key: "completion_p99_ms", Head: "p99", Kind: report.KindNumber},
		{Key: "prompt_tokens_p50", Head: "prompt tok p50", Kind: report.KindCount},
		{Key: "output_tokens_p50", Head: "output tok p50", Kind: report.KindCount},
	}}
	num := func(v float64) report.Cell { return report.NumCell(report.Val(v)) }
	for i := range a.Profiles {
		p := &a.Profiles[i]
		t, c := &p.Latency.TTFTSchedule, &p.Latency.E2ESchedule
		to, co := DistOpts(*t), DistOpts(*c)
		g.Rows = append(g.Rows, []report.Cell{report.TextCell(p.Name), num(float64(p.Offered)), num(p.Share), num(float64(p.Succeeded)),
			num(p.ErrorRate), num(p.RateLimitRate), num(p.TimeoutRate), num(p.GoodputRatio),
			report.ShownCell(t.Text(analyze.Q50), to[0]), report.ShownCell(t.Text(analyze.Q95), to[1]), report.ShownCell(t.Text(analyze.Q99), to[2]),
			report.ShownCell(c.Text(analyze.Q50), co[0]), report.ShownCell(c.Text(analyze.Q99), co[2]),
			num(float64(p.PromptTokensP50)), num(float64(p.OutputTokensP50))})
	}
	report.WriteGridText(w, g)
}
