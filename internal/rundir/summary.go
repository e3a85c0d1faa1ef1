package rundir

import (
	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/judge"
	"github.com/surge-bench/surge/internal/otlp"
	"github.com/surge-bench/surge/internal/predict"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/scrape"
	"github.com/surge-bench/surge/internal/sim"
)

// Summary is summary.json: the whole analysis of one run plus what the
// engine said about itself. It is written once, when the run has ended.
type Summary struct {
	SchemaVersion int                          `json:"schema_version"` // record.SchemaVersion; 0 in folders from before versions
	Run           string                       `json:"run"`
	Partial       bool                         `json:"partial"`
	PartialCause  record.PartialCause          `json:"partial_cause,omitempty"`
	PartialWhy    string                       `json:"partial_why,omitempty"`
	Arrivals      *record.Arrivals             `json:"arrivals,omitempty"` // what became of every arrival of the plan
	Records       int64                        `json:"records"`
	Analysis      *analyze.Result              `json:"analysis"`
	Verdicts      *judge.Verdicts              `json:"verdicts"`   // the SLO per phase and overall, the recovery
	VLLM          analyze.VLLMBench            `json:"vllm_bench"` // vLLM bench field names, for cross-checks
	Engine        scrape.Status                `json:"engine_metrics"`
	EngineWait    map[string]analyze.QueueWait `json:"engine_queue_wait"` // per phase, from the engine's histogram deltas
	// EngineTiming is the engine's own per-request timing per phase (by
	// arrival) and overall, when records carry it.
	EngineTiming map[string]analyze.EngineTiming `json:"engine_timing,omitempty"`
	EngineSpans  *otlp.Report                    `json:"engine_spans,omitempty"` // the OTLP receiver (--otlp-listen)
	SimEvents    []sim.Event                     `json:"sim_events,omitempty"`
	Burst        *BurstInfo                      `json:"burst,omitempty"`
	Prompt       *record.PromptSizing            `json:"prompt_sizing,omitempty"` // intended vs server-counted prompt tokens
	// SelfAccuracy is what surge observed of itself in a live run and
	// whether it kept up; absent in virtual time.
	SelfAccuracy *judge.SelfAccuracy `json:"self_accuracy,omitempty"`
}

// BurstInfo is what summary.json records about a burst run beyond the
// analysis, so that `surge report` can re-render it.
type BurstInfo struct {
	K                 float64             `json:"multiplier"`
	BaselineRPS       float64             `json:"baseline_rps"`
	Mu                float64             `json:"mu_rps"` // 0 = unknown
	MuSource          string              `json:"mu_source"`
	Prediction        *predict.Prediction `json:"prediction,omitempty"`
	BurstEndNs        int64               `json:"burst_end_ns"`
	PlannedRecoveryNs int64               `json:"planned_recovery_ns"`
	SettleNs          int64               `json:"settle_ns"`
	SettleNote        string              `json:"settle_note"`
}
