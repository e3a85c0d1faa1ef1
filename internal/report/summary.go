package report

// Diagnosis is how a run held or failed under its load, as the analysis
// judged it, in words: a failure mode, one sentence naming the evidence,
// and hypotheses to check next. Scope names the run, e.g. "5×".
type Diagnosis struct {
	Scope   string `json:"scope"`
	Mode    string `json:"mode"`    // held, rejected fast, backlogged, retries amplified, generator-limited
	Summary string `json:"summary"` // the evidence for Mode: which metric moved, by how much, in which phase
	Hints   []Hint `json:"hints,omitempty"`
}

// Hint is a hypothesis drawn from how metrics moved together, with the
// evidence behind it and what to check to confirm or refute it.
type Hint struct {
	Hypothesis string `json:"hypothesis"` // e.g. "requests wait outside the engine (gateway, connection pool, network)"
	Evidence   string `json:"evidence"`   // e.g. "TTFT from send p95 rose 1.2s → 6.8s in the burst while the engine's waiting queue stayed 0"
	Check      string `json:"check"`      // what to look at next
}

// RunSummary is the block report.html shows above one run's charts: the
// capacity the prediction used, predicted against measured backlog and
// recovery, the verdicts of each phase and the diagnosis. A NaN number is
// unknown and shown as n/a.
type RunSummary struct {
	Mu       float64 // req/s
	MuSource string

	PredictedPeakBacklog, MeasuredPeakBacklog float64 // requests
	MeasuredBacklogSource                     string  // "engine waiting" or "client in flight"

	PredictedRecoveryS, MeasuredRecoveryS float64 // seconds after the burst's end
	RecoveryLate                          bool    // measured recovery came later than predicted (beyond tolerance)
	RecoveryNote                          string  // e.g. "not recovered by the end of the run (> 60 s)"

	// Verdicts per phase: Scope is the phase ("baseline", "burst",
	// "recovery") or "overall", one Verdict per SLO clause.
	Verdicts []Verdict

	Diagnosis *Diagnosis
}
