package burst

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/judge"
	"github.com/surge-bench/surge/internal/workload"
)

// A simulated serverless burst (issue 28's first "Must show"): a quota of
// 60,000 tokens per minute at 250 tokens a request is 4 req/s with a stock
// of 240 requests; a 5× burst over 2 req/s spends it, fills the gateway's
// queue of 50 and is throttled. The binding bucket is named, the 429s are
// diagnosed as a quota, and the recovery predicted from the refill is
// within 25% of the measured one.
func TestQuotaBurstIsThrottledAndRecoversAtTheRefill(t *testing.T) {
	runs, _, out := virtualBurst(t, func(c *Config) {
		c.BaselineRPS, c.Multipliers = 2, []float64{5}
		c.Warmup, c.Baseline, c.Burst, c.Recovery, c.RecoveryLimit = 10*time.Second, 90*time.Second, time.Minute, 2*time.Minute, 3*time.Minute
		c.Options.Profile = "chat"
		c.Options.PromptTokens, c.Options.OutputTokens = workload.FixedLength(200), workload.FixedLength(50)
		c.Options.Sim.QuotaTokensPerMinute, c.Options.Sim.GatewayQueue = 60000, 50
	})
	r := runs[0]
	term := out.String()
	if r.Prediction == nil || r.Prediction.Params.QuotaRate == 0 {
		t.Fatalf("no quota in the prediction: %+v\n%s", r.Prediction, term)
	}
	if q := r.Prediction.Params.QuotaRate; math.Abs(q-4) > 0.3 {
		t.Errorf("quota rate %.2f req/s, want about 4 (60,000 / 60 / ~250)", q)
	}
	rec := r.Result.Verdicts.Recovery
	if !rec.Recovered {
		t.Fatalf("not recovered: %s\n%s", rec.Message, term)
	}
	measured, predicted := rec.RecoveryTimeMs/1000, r.Prediction.RecoveryTime.Seconds()
	t.Logf("recovery: predicted %.1f s from the refill, measured %.1f s (window 10 s)", predicted, measured)
	if predicted < 10 || math.Abs(measured-predicted) > 0.25*math.Max(measured, predicted) {
		t.Errorf("predicted %.1f s vs measured %.1f s: more than 25%% apart", predicted, measured)
	}
	burst, ok := r.Result.Analysis.Phase("burst")
	if !ok {
		t.Fatal("no burst phase")
	}
	text, b, ok := judge.Binding(&burst.Client.RateLimit, burst.StartMs)
	if !ok || b.Bucket != analyze.BucketNames[1] {
		t.Fatalf("binding bucket %q (%s), want tokens per minute", b.Bucket, text)
	}
	t.Logf("burst %s", text)
	// The stock of 240 lasts 240 / (10 − 4) = 40 s into the burst.
	if at := (b.EmptyAtMs - burst.StartMs) / 1000; math.Abs(at-40) > 5 {
		t.Errorf("the bucket emptied at +%.1f s, want about +40 s", at)
	}
	for _, want := range []string{
		"quota, burst: bound by tokens per minute",
		"5×  quota: ",
		"throttled by a quota",
		"gateway p95",
	} {
		if !strings.Contains(term, want) {
			t.Errorf("terminal lacks %q:\n%s", want, term)
		}
	}
}
