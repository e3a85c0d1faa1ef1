package report

import (
	"fmt"
	"math"
	"slices"
)

// smallReport is a tiny hand-made report for the golden chart data: one run
// with every series, one without engine metrics and with gaps.
func smallReport() HTMLReport {
	nan := math.NaN()
	return HTMLReport{
		Title: "small",
		Runs: []RunCharts{
			{
				Name:                 "burst 2×",
				T:                    []float64{0, 5, 10, 15, 20, 25},
				Offered:              Series{8, 8, 16, 16, 8, 8},
				Sent:                 Series{8, 8, 16, 15.8, 8, 8},
				Completed:            Series{8, 8, 10, 10, 10, 8},
				Goodput:              Series{8, 7.8, 6, 4, 7, 8},
				TTFT:                 LatencySeries{P50: Series{180, 181, 900, 1800, 700, 185}, P95: Series{300, 310, 1500, 2600, 1200, 305}, P99: Series{420, 430, 1900, 3100, 1500, 425}},
				Completion:           LatencySeries{P50: Series{3000, 3010, 3800, 4700, 3600, 3005}, P95: Series{4100, 4150, 5000, 6100, 4900, 4120}, P99: Series{5000, 5020, 6000, 7400, 5800, 5010}},
				TTFTDeadlineMs:       2000,
				CompletionDeadlineMs: 12000,
				InFlight:             Series{27, 27, 60, 95, 40, 27},
				EngineWaiting:        Series{0, 0, 30, 60, 10, 0},
				EngineRunning:        Series{24, 24, 30, 30, 30, 24},
				OldestWaitingAge:     Series{0.2, 0.2, 3, 6, 1.5, 0.2},
				Phases:               []Phase{{"baseline", 0, 10}, {"burst", 10, 20}, {"recovery", 20, 30}, {"extended", 30, 35}},
				Markers:              []Marker{{Kind: MarkerBurstEnd, T: 20}, {Kind: MarkerRecovered, T: 25}, {Kind: MarkerPredictedRecovery, T: 27.5, Label: "predicted recovery (7.5s)"}, {Kind: "scale_up", T: 40}, {Kind: MarkerScaling, T: 12, Label: "scale trigger (replica 1)"}},
				Counts:               Series{40, 40, 80, 80, 40, 40},
				PredictedBacklogT:    Series{10, 15, 20, 27.5},
				PredictedBacklog:     Series{0, 30, 60, 0},
				MeasuredBacklogT:     Series{0, 10, 20, 30},
				MeasuredBacklog:      Series{24, 54, 84, 24},
				MeasuredBacklogLabel: "engine waiting",
				Summary:              &RunSummary{Mu: 10, MuSource: "--capacity-rps", PredictedPeakBacklog: 60, MeasuredPeakBacklog: 60, PredictedRecoveryS: 7.5, MeasuredRecoveryS: 5},
			},
			{
				Name:           "burst 10×, no engine metrics",
				T:              []float64{0, 5, 10},
				Offered:        Series{8, 80, 8},
				Sent:           Series{8, 70, 8},
				Completed:      Series{8, 10, nan},
				Goodput:        Series{8, 2, math.Inf(1)},
				TTFT:           LatencySeries{P50: Series{180, nan, 0}, P95: Series{300, nan, -1}, P99: nil},
				Completion:     LatencySeries{}, // no latency at all: chart left out with a note
				TTFTDeadlineMs: 2000,
				InFlight:       Series{27, 256, 256},
			},
		},
	}
}

// burstReport is a realistic 2×/5×/10× burst experiment from a fluid model
// of an engine with capacity μ = 10 req/s, a baseline λ = 8 req/s, a 30 s
// burst and a 60 s timeout; the 10× run has no engine metrics and an
// admission limit that rejects with 429.
func burstReport() HTMLReport {
	const (
		mu, lambda      = 10.0, 8.0
		dt              = 2.0
		warmup, base    = 20.0, 60.0
		burst, recovery = 30.0, 150.0
		timeoutMs       = 60000.0
	)
	burstStart := warmup + base
	burstEnd := burstStart + burst
	end := burstEnd + recovery
	rep := HTMLReport{
		Title: "surge burst: llama-3.1-8b-instruct on vllm-0.6 1×L4",
		Meta: []KV{
			{Key: "target", Value: "simulated engine (127.0.0.1)"},
			{Key: "model", Value: "llama-3.1-8b-instruct"},
			{Key: "deployment", Value: "vllm-0.6 1×L4"},
			{Key: "hardware", Value: ""},
			{Key: "workload", Value: "chat (prompt 200–1200 tokens, output 50–400)"},
			{Key: "baseline", Value: `"weekday peak" 8 req/s`},
			{Key: "per-request deadline", Value: "TTFT ≤ 2s, completion ≤ 12s"},
			{Key: "tool", Value: "surge (test fixture)"},
		},
		Tables: []Table{fixtureTables()["sweep"]},
	}
	for _, k := range []float64{2, 5, 10} {
		engine := k != 10
		limit := math.Inf(1) // admission limit on the queue, requests
		if !engine {
			limit = 400
		}
		rc := RunCharts{
			Name: fmt.Sprintf("burst %g× (%g req/s over a baseline of %g req/s)", k, k*lambda, lambda),
			Meta: []KV{
				{Key: "burst", Value: fmt.Sprintf("%g req/s for %gs", k*lambda, burst)},
				{Key: "capacity μ (estimated)", Value: fmt.Sprintf("%g req/s", mu)},
			},
			TTFTDeadlineMs:       2000,
			CompletionDeadlineMs: 12000,
			Phases: []Phase{
				{"warmup", 0, warmup}, {"baseline", warmup, burstStart},
				{"burst", burstStart, burstEnd}, {"recovery", burstEnd, end},
			},
		}
		q := 0.0
		recovered := math.NaN()
		calm := 0
		for t := 0.0; t < end; t += dt {
			rate := lambda
			if t >= burstStart && t < burstEnd {
				rate = k * lambda
			}
			admitted := rate
			if q+(rate-mu)*dt > limit {
				admitted = mu + (limit-q)/dt
			}
			q = math.Max(0, q+(admitted-mu)*dt)
			wait := q / mu * 1000 // ms a new arrival waits
			wobble := 1 + 0.04*math.Sin(t*0.7)
			served := math.Min(mu, admitted+q/dt)
			ttft50 := math.Min(timeoutMs, (180+wait)*wobble)
			good := admitted
			if wait > 1800 {
				good = admitted * math.Max(0, 1-(wait-1800)/4000)
			}
			p99 := (420 + wait*1.25) * wobble
			if p99 > timeoutMs {
				p99 = timeoutMs
			}
			rc.T = append(rc.T, t)
			rc.Offered = append(rc.Offered, rate)
			rc.Sent = append(rc.Sent, rate*(1-0.002*math.Abs(math.Sin(t))))
			rc.Completed = append(rc.Completed, served)
			rc.Goodput = append(rc.Goodput, math.Min(good, served))
			rc.TTFT.P50 = append(rc.TTFT.P50, ttft50)
			rc.TTFT.P95 = append(rc.TTFT.P95, math.Min(timeoutMs, (300+wait*1.15)*wobble))
			rc.TTFT.P99 = append(rc.TTFT.P99, p99)
			rc.Completion.P50 = append(rc.Completion.P50, math.Min(timeoutMs, (3000+wait)*wobble))
			rc.Completion.P95 = append(rc.Completion.P95, math.Min(timeoutMs, (4100+wait*1.15)*wobble))
			rc.Completion.P99 = append(rc.Completion.P99, math.Min(timeoutMs, (5000+wait*1.25)*wobble))
			rc.InFlight = append(rc.InFlight, q+mu*3.2*wobble)
			rc.OldestWaitingAge = append(rc.OldestWaitingAge, wait*1.1/1000+0.1)
			if engine {
				rc.EngineWaiting = append(rc.EngineWaiting, q)
				rc.EngineRunning = append(rc.EngineRunning, math.Min(32, mu*3.2*wobble+q))
			}
			if t >= burstEnd && math.IsNaN(recovered) {
				if p99 <= 1.1*430 {
					calm++
				} else {
					calm = 0
				}
				if calm == 3 {
					recovered = t
				}
			}
		}
		backlog := math.Min((k*lambda-mu)*burst, limit)
		predRec := backlog / (mu - lambda)
		for t := 0.0; t <= burst+predRec+1; t++ {
			b := math.Min((k*lambda-mu)*t, backlog)
			if t > burst {
				b = math.Max(0, backlog-(mu-lambda)*(t-burst))
			}
			rc.PredictedBacklogT = append(rc.PredictedBacklogT, burstStart+t)
			rc.PredictedBacklog = append(rc.PredictedBacklog, b)
		}
		rc.MeasuredBacklogT, rc.MeasuredBacklog = rc.T, rc.InFlight
		rc.MeasuredBacklogLabel = "client in flight"
		if engine {
			rc.MeasuredBacklogLabel = "engine waiting"
			rc.MeasuredBacklog = nil
			for i := range rc.T {
				rc.MeasuredBacklog = append(rc.MeasuredBacklog, rc.EngineWaiting[i]+rc.EngineRunning[i])
			}
		}
		for range rc.T {
			rc.Counts = append(rc.Counts, lambda*dt)
		}
		measRec := math.NaN()
		if !math.IsNaN(recovered) {
			measRec = recovered - burstEnd
		}
		rc.Summary = &RunSummary{
			Mu: mu, MuSource: "estimated from the burst's backlog",
			PredictedPeakBacklog: backlog, MeasuredPeakBacklog: slices.Max(rc.MeasuredBacklog), MeasuredBacklogSource: rc.MeasuredBacklogLabel,
			PredictedRecoveryS: predRec, MeasuredRecoveryS: measRec,
			RecoveryLate: math.IsNaN(measRec) || measRec > predRec*1.1,
			Verdicts:     fixtureVerdicts(k),
		}
		if math.IsNaN(measRec) {
			rc.Summary.RecoveryNote = "not recovered by the end of the run"
		}
		if k == 5 {
			rc.Summary.Diagnosis = &Diagnosis{Scope: "5×", Mode: "backlogged",
				Summary: "TTFT p95 rose 310ms → > 60s from the burst on and goodput fell to 9% while requests kept completing at μ",
				Hints: []Hint{{Hypothesis: "requests waited in the engine's queue (waiting or prefill pressure), not in decode",
					Evidence: "engine waiting rose 0 → 900 in the burst while completions held at 10 req/s", Check: "the engine's queue-time histogram and KV-cache use"}}}
			for i, ev := range []string{"scale trigger", "capacity requested", "node ready", "container ready", "model ready", "first served"} {
				rc.Markers = append(rc.Markers, Marker{Kind: MarkerScaling, T: burstStart + []float64{5, 6, 14, 18, 30, 30.2}[i], Label: ev + " (replica 1)"})
			}
		}
		rc.Markers = append(rc.Markers, []Marker{
			{Kind: MarkerBurstEnd, T: burstEnd},
			{Kind: MarkerPredictedRecovery, T: burstEnd + predRec},
		}...)
		if !math.IsNaN(recovered) {
			rc.Markers = append(rc.Markers, Marker{Kind: MarkerRecovered, T: recovered})
		}
		rep.Runs = append(rep.Runs, rc)
	}
	return rep
}

// fixtureVerdicts are burstReport's SLO verdicts by phase, consistent with
// its series: the 2× run holds, the 5× and 10× runs never recover.
func fixtureVerdicts(k float64) []Verdict {
	v := func(scope, check string, pass bool, detail string) Verdict {
		st := VerdictFail
		if pass {
			st = VerdictPass
		}
		return Verdict{Scope: scope, Check: check, Status: st, Detail: detail}
	}
	const ttft, good = "p95 TTFT ≤ 2s", "goodput ≥ 99% of offered"
	if k == 2 {
		return []Verdict{
			v("baseline", ttft, true, "310ms"), v("burst", ttft, true, "1.2s"), v("recovery", ttft, true, "420ms"), v("overall", ttft, true, "640ms"),
			v("baseline", good, true, "100%"), v("burst", good, true, "99.6%"), v("recovery", good, true, "100%"), v("overall", good, true, "99.9%"),
		}
	}
	return []Verdict{
		v("baseline", ttft, true, "310ms"), v("burst", ttft, false, "> 60s (too many timeouts)"), v("recovery", ttft, false, "> 60s (too many timeouts)"), v("overall", ttft, false, "> 60s (too many timeouts)"),
		v("baseline", good, true, "100%"), v("burst", good, false, "9.1%"), v("recovery", good, false, "0.0%"), v("overall", good, false, "31.4%"),
	}
}
