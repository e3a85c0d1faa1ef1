package experiment

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/run"
)

// Measure is what one run says about its measured phase beyond the
// analysis: rates by completion time, which is what a throughput knee is
// about, and whether the generator kept its schedule.
//
// Throughput counts requests by when they completed, not when they were
// scheduled: with T = [start, end) the measured phase,
//
//	request rate   = ok requests completed in T / |T|   (requests/s)
//	output tok/s   = output tokens of those requests / |T|
//	total tok/s    = (prompt + output tokens) of those requests / |T|
//
// so a level above capacity shows the capacity, not the offered rate (by
// scheduled arrival every request eventually counts).
//
// The generator check is analyze.GeneratorCheck over the phase's sent
// requests: a run whose generator fell behind describes surge on this
// machine, not the target.
type Measure struct {
	Phase       analyze.PhaseResult `json:"-"`
	StartS      float64             `json:"start_s"` // the measured phase, seconds since the run start
	EndS        float64             `json:"end_s"`
	CompletedOK int64               `json:"completed_ok"` // ok requests completed within the phase
	RequestRPS  float64             `json:"request_rps"`
	OutputTPS   float64             `json:"output_tokens_per_s"`
	TotalTPS    float64             `json:"total_tokens_per_s"`

	ScheduledRPS     float64 `json:"scheduled_rps"` // 0 when not measurable (closed loop, too few sends)
	AchievedRPS      float64 `json:"achieved_send_rps"`
	LagP99Ms         float64 `json:"lag_p99_ms"`
	GeneratorLimited bool    `json:"generator_limited"`
	GeneratorNote    string  `json:"generator_note,omitempty"`
}

// MeasureRun measures the named phase of a run from its records. closed
// marks a closed loop, whose sends are not scheduled (no generator check).
func MeasureRun(res *run.Result, phase string, closed bool) (Measure, error) {
	p, ok := res.Analysis.Phase(phase)
	if !ok {
		return Measure{}, fmt.Errorf("experiment: run %s has no phase %q", res.Spec.Name, phase)
	}
	m := Measure{Phase: p, StartS: p.StartMs / 1000, EndS: p.EndMs / 1000, LagP99Ms: p.Latency.ScheduleLag.P99Ms}
	start, end := int64(p.StartMs*1e6), int64(p.EndMs*1e6)
	var prompt, output int64
	var sp analyze.GeneratorSpan
	generator := !closed && !res.Virtual
	err := res.Records.Each(func(r *record.Record) error {
		if r.Outcome == record.OK && r.DoneNs >= start && r.DoneNs < end {
			m.CompletedOK++
			prompt += int64(max(0, r.PromptTokens))
			output += int64(max(0, r.OutputTokens))
		}
		if generator && r.ScheduledNs >= start && r.ScheduledNs < end && r.SentNs != record.None {
			sp.Add(r.ScheduledNs, r.SentNs) // GeneratorOf, in the same pass
		}
		return nil
	})
	if err != nil {
		return Measure{}, fmt.Errorf("experiment: run %s: %w", res.Spec.Name, err)
	}
	if d := m.EndS - m.StartS; d > 0 {
		m.RequestRPS = float64(m.CompletedOK) / d
		m.OutputTPS = float64(output) / d
		m.TotalTPS = float64(prompt+output) / d
	}
	if generator {
		g := sp.Check(m.LagP99Ms)
		m.ScheduledRPS, m.AchievedRPS = g.ScheduledRPS, g.AchievedRPS
		m.GeneratorLimited, m.GeneratorNote = g.Behind, g.Note
	}
	return m, nil
}

// Loop runs the levels of a capacity search or a sweep one after another:
// before each level of a live run the settle gate waits (when
// settleTimeout > 0), then level(i) runs level i (from 1) and says whether
// its run was partial and whether another level follows. Loop stops at
// Ctrl-C, at a partial run, or when no level follows, and reports whether
// the experiment was cut short.
func Loop(ctx context.Context, env *run.Env, out io.Writer, settleTimeout time.Duration, label string, level func(i int) (partial, more bool, err error)) (bool, error) {
	gate := &Gate{Env: env, Timeout: settleTimeout, Out: out}
	for i := 1; ; i++ {
		if ctx.Err() != nil {
			return true, nil
		}
		if !env.Virtual && settleTimeout > 0 {
			d, note, err := gate.Wait(ctx)
			if err != nil {
				return false, err
			}
			fmt.Fprintf(out, "settle before %s %d: %s (%s)\n", label, i, d.Round(100*time.Millisecond), note)
		}
		if why := env.BudgetExhausted(); why != "" {
			fmt.Fprintf(out, "%s %d and later: not started (%s)\n", label, i, why)
			return true, nil
		}
		partial, more, err := level(i)
		if why := env.BudgetStop(); partial && why != "" {
			fmt.Fprintf(out, "no %s after %s %d is started (%s)\n", label, label, i, why)
		}
		if err != nil || partial {
			return partial, err
		}
		if !more {
			return false, nil
		}
	}
}
