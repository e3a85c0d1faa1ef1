package experiment

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/golden"
	"github.com/surge-bench/surge/internal/judge"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/report"
	"github.com/surge-bench/surge/internal/run"
	"github.com/surge-bench/surge/internal/scrape"
)

// The end of a burst's terminal output for the 3-multiplier demo: the
// verdicts, the why line, and a diagnosis line plus at most one hint per
// multiplier — with the reports and exit lines, about 15 lines.
func TestTerminalVerdictsAndDiagnosis(t *testing.T) {
	ph := func(b, r judge.Outcome) []PhaseVerdict {
		return []PhaseVerdict{{Name: "baseline", Outcome: b}, {Name: "recovery", Outcome: r}}
	}
	lines := []VerdictLine{
		{Scope: "2×", Label: "burst", Outcome: judge.Pass, Phases: ph(judge.Pass, judge.Inconclusive)},
		{Scope: "5×", Label: "burst", Outcome: judge.Fail, Phases: ph(judge.Fail, judge.Pass), Detail: "burst: p95 TTFT > 60s (limit 2s, n=1,204): 300 timeouts (24.9%) put the p95 above the 60s timeout; goodput 68.97% (limit 99%, n=1,204): 66.3%–71.5% with 95% confidence"},
		{Scope: "10×", Label: "burst", Outcome: judge.Fail, Phases: ph(judge.Fail, judge.Fail), Detail: "burst: p95 TTFT > 60s (limit 2s, n=2,400); goodput 55.08% (limit 99%, n=2,400)"},
	}
	ds := []report.Diagnosis{
		{Scope: "2×", Mode: judge.ModeHeld, Summary: "goodput 96.49% of the burst's arrivals, TTFT p95 from schedule 343ms → 557ms (1.62×, baseline → burst); no rejections, timeouts, errors or drops",
			Hints: []report.Hint{{Hypothesis: "decode contention", Evidence: "completion p50 3.23s → 5.48s (1.69×, baseline → burst)", Check: "the output-token distribution"}}},
		{Scope: "5×", Mode: judge.ModeBacklogged, Summary: "24.79% of the burst's arrivals timed out",
			Hints: []report.Hint{
				{Hypothesis: "requests queued in the engine before their first token", Evidence: "the engine's waiting queue peaked at 604 in the burst (baseline 3)", Check: "whether the engine's queue time accounts for the TTFT"},
				{Hypothesis: "not printed in the terminal", Evidence: "only in results.md", Check: "results.md"},
			}},
		{Scope: "10×", Mode: judge.ModeRejectedFast, Summary: "75.27% of the burst's arrivals were rejected (1796 × 429) with a median response of 2ms"},
	}
	var b strings.Builder
	PrintVerdicts(&b, "SLO p95 TTFT ≤ 2s, goodput ≥ 99% of offered; measured vs limit", lines, []string{"5×: the baseline phase already missed the SLO (goodput 95% of offered < 99%)"})
	PrintDiagnoses(&b, ds)
	out := b.String()
	golden.Check(t, "terminal-burst.golden", []byte(out))
	if strings.Contains(out, "not printed in the terminal") {
		t.Error("a second hint reached the terminal")
	}
	// + "reports: …" and "exit 1: …" printed by the callers.
	if n := strings.Count(out, "\n") + 2; n > 15 {
		t.Errorf("the verdict, diagnosis and exit block has %d lines, want at most 15:\n%s", n, out)
	}
	b.Reset()
	PrintDiagnoses(&b, nil)
	if b.Len() != 0 {
		t.Errorf("no diagnoses printed %q", b.String())
	}
}

// burstResult is a run over HTTP (not virtual) whose burst makes TTFT
// from send grow to 6 s while the engine's scraped waiting queue stays 0,
// and whose generator kept its schedule.
func burstResult(t *testing.T, virtual bool) *run.Result {
	t.Helper()
	phases := []analyze.Phase{
		{Name: "baseline", Start: 0, End: 30 * time.Second, Rate: 10},
		{Name: "burst", Start: 30 * time.Second, End: 40 * time.Second, Rate: 30},
		{Name: "recovery", Start: 40 * time.Second, End: 70 * time.Second, Rate: 10},
	}
	var recs []record.Record
	add := func(phase string, from, to time.Duration, rate float64, ttft func(k int) time.Duration) {
		gap := time.Duration(float64(time.Second) / rate)
		for k, at := 0, from; at < to; k, at = k+1, at+gap {
			r := record.New(fmt.Sprintf("r%d", len(recs)), int64(len(recs)), phase, int64(at))
			r.SentNs, r.ConnNs = int64(at), int64(at+time.Millisecond)
			r.FirstChunkNs = int64(at + ttft(k))
			r.FirstTokenNs = r.FirstChunkNs
			r.DoneNs = r.FirstTokenNs + int64(time.Second)
			r.Status, r.Outcome, r.Attempts = 200, record.OK, 1
			r.PromptTokens, r.OutputTokens, r.MaxTokens, r.Chunks = 100, 11, 64, 11
			r.TPOTNs = int64(100 * time.Millisecond)
			r.Good = analyze.Judge(&r, analyze.DefaultDeadlines)
			recs = append(recs, r)
		}
	}
	steady := func(int) time.Duration { return 100 * time.Millisecond }
	add("baseline", 0, 30*time.Second, 10, steady)
	add("burst", 30*time.Second, 40*time.Second, 30, func(k int) time.Duration { return 100*time.Millisecond + time.Duration(k)*20*time.Millisecond })
	add("recovery", 40*time.Second, 70*time.Second, 10, steady)
	a, err := analyze.Records(analyze.Config{Phases: phases, Timeout: time.Minute}, recs, 0)
	if err != nil {
		t.Fatal(err)
	}
	var engine []scrape.Sample
	for s := 0; s <= 70; s++ {
		engine = append(engine, scrape.Sample{TNs: int64(s) * int64(time.Second), Has: scrape.Set(0).With(scrape.Waiting).With(scrape.Running), Waiting: 0, Running: 3})
	}
	return &run.Result{Analysis: a, Verdicts: judge.Run(a, judge.Rules{SLO: judge.DefaultSLO, Engine: engine}), Records: record.SliceSource(recs), Engine: engine, Virtual: virtual}
}

// The wiring from a run: engine gauges per phase from the scraped
// samples, the generator verdict over the burst's sends, and the records
// — enough for Diagnose to place the wait outside the engine.
func TestDiagnoseRun(t *testing.T) {
	res := burstResult(t, false)
	in := DiagnosisInput("5×", res)
	if e := in.Engine["burst"]; e.Scrapes != 11 || e.WaitingMax != 0 || e.RunningMax != 3 {
		t.Errorf("burst engine queue %+v, want 11 scrapes (30 s … 40 s), waiting 0, running 3", e)
	}
	if _, ok := in.Engine["overall"]; !ok {
		t.Error("no overall engine queue")
	}
	if g := in.Generator; g.ScheduledRPS < 29 || g.ScheduledRPS > 31 || g.Behind {
		t.Errorf("generator verdict over the burst: %+v, want about 30 req/s scheduled, not behind", g)
	}
	d := Diagnose("5×", res)
	if d.Mode != judge.ModeBacklogged || len(d.Hints) == 0 || !strings.HasPrefix(d.Hints[0].Hypothesis, "requests waited outside the engine") {
		t.Errorf("got %s %s: %+v", d.Scope, d.Mode, d.Hints)
	}
	if in := DiagnosisInput("5×", burstResult(t, true)); in.Generator != (analyze.Generator{}) {
		t.Errorf("virtual time has no generator to judge, got %+v", in.Generator)
	}
	noEngine := burstResult(t, false)
	noEngine.Engine = nil
	if in := DiagnosisInput("5×", noEngine); in.Engine != nil {
		t.Errorf("engine queues without engine samples: %+v", in.Engine)
	}
}

// WithDiagnosis keeps a summary the report already has and makes one,
// every number unknown, when there is none.
func TestWithDiagnosis(t *testing.T) {
	d := report.Diagnosis{Scope: "5×", Mode: judge.ModeHeld}
	s := WithDiagnosis(nil, d)
	if s.Diagnosis == nil || s.Diagnosis.Mode != judge.ModeHeld || !math.IsNaN(s.Mu) || !math.IsNaN(s.MeasuredRecoveryS) {
		t.Errorf("new summary %+v", s)
	}
	have := &report.RunSummary{Mu: 9.1, MuSource: "measured"}
	if got := WithDiagnosis(have, d); got != have || got.Mu != 9.1 || got.Diagnosis.Scope != "5×" {
		t.Errorf("kept summary %+v", got)
	}
}
