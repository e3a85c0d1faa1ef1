package burst

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/judge"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/workload"
)

// TestEmbeddingsBurstAgainstTheSimulator: a 5× burst of embeddings
// requests (8 texts of 256 tokens each) against the simulated engine,
// which serves them as prefill-only work. μ is measured for that work:
// the burst completes at μ (within 5%), the model's recovery is within
// one recovery window of the measured one, and the verdicts are decided
// on their samples: the baseline holds, the burst fails. Every record carries its
// 8 inputs, no output tokens, and a first token at its answer.
func TestEmbeddingsBurstAgainstTheSimulator(t *testing.T) {
	runs, _, out := virtualBurst(t, func(c *Config) {
		// Five minutes of baseline: at 1.5 req/s, 450 requests, enough to
		// decide a 99% goodput clause (about 380 all good are needed).
		c.BaselineRPS, c.Multipliers = 1.5, []float64{5}
		c.Warmup, c.Baseline, c.Burst, c.Recovery, c.RecoveryLimit = 10*time.Second, 5*time.Minute, time.Minute, 3*time.Minute, 4*time.Minute
		c.Options.API = "embeddings"
		c.Options.Inputs = workload.FixedLength(8)
		c.Options.PromptTokens = workload.FixedLength(256)
	})
	r := runs[0]
	term := out.String()
	if r.Prediction == nil || r.Prediction.Params.Mu == 0 {
		t.Fatalf("no prediction: %+v\n%s", r.Prediction, term)
	}
	mu := r.Prediction.Params.Mu
	burst, ok := r.Result.Analysis.Phase("burst")
	if !ok {
		t.Fatal("no burst phase")
	}
	t.Logf("μ %.2f req/s; burst completed %.2f req/s, inputs %.1f/s, prompt tokens %.0f/s", mu, burst.CompletedRPS, burst.InputsPS, burst.PromptTokensPS)
	if math.Abs(burst.CompletedRPS-mu) > 0.05*mu {
		t.Errorf("the burst completed %.2f req/s, the prefill-only μ is %.2f", burst.CompletedRPS, mu)
	}
	if burst.Inputs != 8*burst.Outcomes[record.OK] || burst.OutputTokens != 0 {
		t.Errorf("burst: %d inputs and %d output tokens over %d ok requests, want 8 each and none", burst.Inputs, burst.OutputTokens, burst.Outcomes[record.OK])
	}
	v := r.Result.Verdicts
	bv, _ := v.Phase("baseline")
	pv, _ := v.Phase("burst")
	if bv.Outcome != judge.Pass || pv.Outcome != judge.Fail {
		t.Errorf("verdicts: baseline %s, burst %s; want PASS and FAIL\n%s", bv.Outcome, pv.Outcome, term)
	}
	rec := v.Recovery
	if !rec.Recovered {
		t.Fatalf("not recovered: %s\n%s", rec.Message, term)
	}
	measured, predicted := rec.RecoveryTimeMs/1000, r.Prediction.RecoveryTime.Seconds()
	t.Logf("recovery: predicted %.1f s, measured %.1f s (window %.0f s)", predicted, measured, rec.ResolutionMs/1000)
	// At 1.5 req/s the recovery rule's windows are long (enough requests
	// in each to judge a p99): the measurement's resolution.
	if math.Abs(measured-predicted) > rec.ResolutionMs/1000 {
		t.Errorf("predicted %.1f s vs measured %.1f s: more than a window (%.0f s) apart", predicted, measured, rec.ResolutionMs/1000)
	}
	if !strings.Contains(term, "inputs (texts or documents) of ok requests per second") {
		t.Errorf("the terminal does not say what the embedder read:\n%s", term)
	}
}
