package report

func pct(p50, p95, p99 float64) Percentiles {
	return Percentiles{P50: Val(p50), P95: Val(p95), P99: Val(p99)}
}

// fullRow is a 2× burst row with every metric measured.
func fullRow() Row {
	return Row{
		Model: "llama-3.1-8b-instruct", Workload: "chat", Deployment: "vllm-0.6 1×L4",
		Multiplier:  Val(2),
		BaselineRPS: Val(8), BurstRPS: Val(16),
		OfferedRPS: Val(9.6), SentRPS: Val(9.6), CompletedRPS: Val(9.55), GoodputRPS: Val(9.4),
		TTFT:              pct(182.4, 611, 948.25),
		Completion:        pct(3120, 5890, 7420),
		QueueWait:         pct(3.2, 240, 512),
		EngineQueue:       pct(2.9, 231, 530),
		RejectionRate:     Val(0.0021),
		TimeoutRate:       Val(0),
		ErrorRate:         Val(0.0005),
		DropRate:          Val(0),
		Recovery:          RecoveredAfter(24),
		PredictedRecovery: RecoveredAfter(30),
		RecoveryLate:      new(bool),
		SLO:               map[string]VerdictStatus{"ttft_p95": VerdictPass, "goodput_ratio": VerdictFail}, // e2e_p99 not checked
		Samples:           5760,
	}
}

// naRow has every value that can be unavailable left unavailable.
func naRow() Row {
	return Row{
		Multiplier:        Unavailable("not a burst run"),
		BaselineRPS:       Unavailable(ReasonNoBurst),
		BurstRPS:          Unavailable(ReasonNoBurst),
		OfferedRPS:        Unavailable(ReasonNoSamples),
		SentRPS:           Unavailable(ReasonNoSamples),
		CompletedRPS:      Unavailable(ReasonNoSamples),
		GoodputRPS:        Unavailable(ReasonNoSamples),
		TTFT:              PercentilesNA(ReasonNoSamples),
		Completion:        PercentilesNA(ReasonNoSamples),
		QueueWait:         PercentilesNA(ReasonNoEngineTelemetry),
		EngineQueue:       PercentilesNA(ReasonNoEngineTiming),
		RejectionRate:     Unavailable(ReasonNoSamples),
		TimeoutRate:       Unavailable(ReasonNoSamples),
		ErrorRate:         Unavailable(ReasonNoSamples),
		DropRate:          Opt{}, // forgotten by the caller: still n/a, never 0
		Recovery:          RecoveryNA(ReasonNoBurst),
		PredictedRecovery: RecoveryNA("capacity μ unknown"),
	}
}

// censoredRow is a 10× burst where more than 1% timed out, without engine
// telemetry.
func censoredRow() Row {
	r := fullRow()
	r.Multiplier, r.BurstRPS = Val(10), Val(80)
	r.OfferedRPS, r.SentRPS, r.CompletedRPS, r.GoodputRPS = Val(20.8), Val(19.9), Val(11.2), Val(6.05)
	r.TTFT = Percentiles{P50: Val(8400), P95: Val(41200), P99: Above(60000, ReasonCensoredP99)}
	r.Completion = Percentiles{P50: Val(14800), P95: Val(52000), P99: Above(60000, ReasonCensoredP99)}
	r.QueueWait = PercentilesNA(ReasonNoEngineTelemetry)
	r.EngineQueue = PercentilesNA(ReasonNoEngineTiming)
	r.RejectionRate, r.TimeoutRate, r.ErrorRate, r.DropRate = Val(0.12), Val(0.043), Val(0.001), Val(0.0433)
	r.Recovery = RecoveredAfter(212.5)
	r.PredictedRecovery = RecoveredAfter(180)
	r.Samples = 12480
	return r
}

// notRecoveredRow is a 5× burst that did not recover in the watched window.
func notRecoveredRow() Row {
	r := fullRow()
	r.Multiplier, r.BurstRPS = Val(5), Val(40)
	r.OfferedRPS, r.SentRPS, r.CompletedRPS, r.GoodputRPS = Val(14.4), Val(14.4), Val(12.9), Val(10.1)
	r.TTFT = pct(1450, 9800, 21400)
	r.Completion = pct(6100, 18300, 30900)
	r.Recovery = NotRecoveredWithin(300)
	r.PredictedRecovery = NeverRecovers("baseline 8 req/s ≥ capacity 7.5 req/s")
	r.Samples = 8640
	return r
}

// partialRow is a run interrupted during the burst.
func partialRow() Row {
	r := fullRow()
	r.Multiplier, r.BurstRPS = Val(5), Val(40)
	r.Workload = "rag"
	r.Recovery = RecoveryNA("run ended before the recovery phase")
	r.Samples = 1312
	r.Partial, r.PartialReason = true, "interrupted (SIGINT) at 2m41s, during the burst"
	return r
}

var fixtureMeta = []KV{
	{Key: "baseline", Value: `"weekday peak" 8 req/s`},
	{Key: "per-request deadline", Value: "TTFT ≤ 2s from scheduled arrival, completion ≤ 12s"},
	{Key: "percentiles", Value: "over requests by scheduled arrival, measured phases only"},
	{Key: "tool", Value: "surge (test)"},
}

// fixtureTables are the golden cases of the results table.
func fixtureTables() map[string]Table {
	return map[string]Table{
		"full":          {Title: "surge burst", Meta: fixtureMeta, Rows: []Row{fullRow()}},
		"all_na":        {Title: "surge run", Rows: []Row{naRow()}},
		"censored_p99":  {Title: "surge burst", Meta: fixtureMeta, Rows: []Row{censoredRow()}},
		"not_recovered": {Title: "surge burst", Meta: fixtureMeta, Rows: []Row{notRecoveredRow()}},
		"partial":       {Title: "surge burst", Meta: fixtureMeta, Rows: []Row{partialRow()}},
		"thinking_retries": {Title: "surge burst", Meta: fixtureMeta, Rows: []Row{thinkingRow()}, Notes: []string{
			"burst: retries: 251 attempts for 77 arrivals (3.26 per arrival, 4.18 attempts/s)",
		}},
		"sweep": {
			Title: "surge burst: 2×, 5×, 10× over the weekday baseline",
			Meta:  fixtureMeta,
			// Out of order on purpose: renderers sort by model, workload, deployment, k.
			Rows: []Row{censoredRow(), partialRow(), fullRow(), notRecoveredRow()},
			Verdicts: []Verdict{
				{Scope: "2×", Check: "p95 TTFT ≤ 2s", Status: VerdictPass, Detail: "observed 611ms"},
				{Scope: "5×", Check: "goodput ≥ 99% of offered", Status: VerdictFail, Detail: "observed 70.14%"},
				{Scope: "10×", Check: "p99 completion ≤ 12s", Status: VerdictFail, Detail: "observed > 60s"},
				{Scope: "10×", Check: "engine queue p95 ≤ 1s", Status: VerdictUnknown, Detail: "no engine telemetry"},
			},
			Notes: []string{"the generator fell behind during the 10× burst: schedule lag p99 38ms"},
		},
		// A run of named phases: rows in plan order (base, spike, after —
		// not alphabetical), the phase in its own column, then overall.
		"phases": {
			Title: "surge run: simulator",
			Meta:  fixtureMeta,
			Omit:  BurstColumns,
			Rows: []Row{
				phaseRow("base", fullRow()), phaseRow("spike", censoredRow()), phaseRow("after", fullRow()), phaseRow("overall", partialRow()),
			},
		},
		// A capacity search's detail table: the phase column is headed
		// "step".
		"steps": {
			Title:     "Results table, one row per step",
			Omit:      BurstColumns,
			PhaseHead: "step",
			Rows:      []Row{phaseRow("step-01-1rps", fullRow()), phaseRow("step-02-2rps", censoredRow())},
		},
		"diagnosed": {
			Title: "surge burst: 2× and 10×",
			Meta:  fixtureMeta,
			Rows:  []Row{fullRow(), censoredRow()},
			Verdicts: []Verdict{
				{Scope: "2×", Check: "p95 TTFT ≤ 2s", Status: VerdictPass, Detail: "observed 611ms"},
				{Scope: "10×", Check: "p99 completion ≤ 12s", Status: VerdictFail, Detail: "observed > 60s"},
			},
			Diagnoses: []Diagnosis{
				{Scope: "2×", Mode: "held", Summary: "goodput 99.5% of the burst's arrivals, TTFT p95 from schedule 343ms → 557ms (1.62×, baseline → burst)"},
				{Scope: "10×", Mode: "backlogged", Summary: "24.8% of the burst's arrivals timed out", Hints: []Hint{
					{Hypothesis: "requests queued in the engine before their first token", Evidence: "TTFT from send p95 343ms → > 60s (≥ 175×, baseline → burst); the engine's waiting queue peaked at 604", Check: "whether the engine's queue time accounts for the TTFT"},
					{Hypothesis: "the target kept working on requests the client had given up on (stale work)", Evidence: "24.8% of the burst's arrivals timed out (timeout 60s)", Check: "whether the server aborts a request when the client disconnects"},
				}},
			},
		},
	}
}

// thinkingRow is a row where some requests thought first and retries
// multiplied the load: the TTFT text and attempts columns appear.
func thinkingRow() Row {
	r := fullRow()
	r.TTFTText = pct(900, 1400, 2100)
	r.AttemptsPerArrival, r.AttemptsRPS = Val(251.0/77), Val(4.18)
	return r
}

// phaseRow is r as the row of the named phase of a run (no multiplier).
func phaseRow(phase string, r Row) Row {
	r.Phase = phase
	r.Workload = "chat"
	r.Multiplier = Unavailable("not a burst")
	return r
}
