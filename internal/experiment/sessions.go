package experiment

import (
	"fmt"
	"io"
	"strconv"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/report"
)

// The columns of the per-turn table of a sessions run.
var turnColumns = []report.Column{
	{Key: "turn", Head: "turn", Kind: report.KindText},
	{Key: "requests", Head: "requests", Kind: report.KindCount, Desc: "requests of this turn in every session started after the warmup (fan-out sub-requests included)"},
	{Key: "ok", Head: "ok", Kind: report.KindCount},
	{Key: "ttft_send_p50_ms", Head: "TTFT send p50", Kind: report.KindMs},
	{Key: "ttft_send_p95_ms", Head: "TTFT send p95", Kind: report.KindMs},
	{Key: "ttft_schedule_p50_ms", Head: "TTFT sched p50", Kind: report.KindMs, Desc: "first token − the turn's ready time (its arrival for turn 1; the previous answer + think time after)"},
	{Key: "ttft_schedule_p95_ms", Head: "TTFT sched p95", Kind: report.KindMs},
	{Key: "prompt_tokens_p50", Head: "prompt tok p50", Kind: report.KindCount, Desc: "median prompt tokens the server reported for the ok requests: the context the turn carried"},
	{Key: "prefix_tokens_p50", Head: "shared p50", Kind: report.KindCount, Desc: "median intended tokens shared with the turn before (the conversation so far)"},
	{Key: "goodput_ratio", Head: "goodput", Kind: report.KindRatio, Desc: "requests that met the per-request deadline (from the ready time) / requests"},
}

// SessionTable is the per-turn table of a sessions run, titled title with
// the session goodput above it; false when the run had no sessions.
func SessionTable(title string, ss *analyze.SessionResult) (report.Grid, bool) {
	if ss == nil {
		return report.Grid{}, false
	}
	t := report.Grid{Title: title, Columns: turnColumns}
	judged := ss.Good + ss.Bad
	goodput := "n/a (no session was judged)"
	if judged > 0 {
		goodput = fmt.Sprintf("%.1f%% (%d good of %d judged)", 100*ss.GoodputRatio, ss.Good, judged)
	}
	t.Meta = []report.KV{
		{Key: "sessions", Value: fmt.Sprintf("%d started: %d good, %d bad, %d unfinished", ss.Sessions, ss.Good, ss.Bad, ss.Unfinished)},
		{Key: "session goodput", Value: goodput},
	}
	for _, tr := range ss.Turns {
		name := strconv.Itoa(tr.Turn)
		if tr.AndLater {
			name += "+"
		}
		send, sched := DistOpts(tr.TTFTSend), DistOpts(tr.TTFTSchedule)
		count := func(n int) report.Cell {
			if n == 0 {
				return report.NumCell(report.Unavailable("the server reported no prompt tokens"))
			}
			return Num(float64(n))
		}
		t.Rows = append(t.Rows, []report.Cell{
			report.TextCell(name), Num(float64(tr.Requests)), Num(float64(tr.OK)),
			report.NumCell(send[0]), report.NumCell(send[1]), report.NumCell(sched[0]), report.NumCell(sched[1]),
			count(tr.PromptTokensP50), Num(float64(tr.PrefixTokensP50)), Num(tr.GoodputRatio),
		})
	}
	t.Notes = []string{
		"Sessions start on the open-loop schedule; the turns inside a session are closed-loop (each waits for the answer before it and a think time), so a later turn's TTFT from schedule counts from the moment it became ready.",
		"A session is good when every planned turn ran and met its deadline, bad when a request of it failed or missed its deadline (a failed turn ends its session), unfinished when the plan ended (or the run was stopped) before its last turn; session goodput = good / (good + bad).",
	}
	return t, true
}

// SessionTables is the per-turn table of one run, when it had sessions.
func SessionTables(title string, a *analyze.Result) []report.Grid {
	if t, ok := SessionTable(title, a.Sessions); ok {
		return []report.Grid{t}
	}
	return nil
}

// PrintSessions prints the per-turn table of a sessions run on w.
func PrintSessions(w io.Writer, a *analyze.Result) {
	for _, t := range SessionTables("Sessions, per turn", a) {
		fmt.Fprintln(w)
		report.WriteGridText(w, report.Grid{Columns: t.Columns, Rows: t.Rows, Meta: t.Meta, Title: t.Title})
	}
}
