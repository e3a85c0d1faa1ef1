package burst

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/experiment"
	"github.com/surge-bench/surge/internal/judge"
	"github.com/surge-bench/surge/internal/predict"
	"github.com/surge-bench/surge/internal/report/browsertest"
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
	// The backlog waits at the gateway, not in the engine: the measured
	// curve counts it, and peaks near the predicted queue of 50.
	_, v, label := experiment.MeasuredBacklog(r.Result)
	if peak := slices.Max(v); peak < 0.8*r.Prediction.PeakBacklog || !strings.Contains(label, "gateway") {
		t.Errorf("measured backlog peak %.0f (%s), predicted %.0f", peak, label, r.Prediction.PeakBacklog)
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

// TestQuotaReportInChromium opens the report of a throttled burst in
// headless Chromium: every chart draws, the quota chart among them, and
// the waterfall shows the gateway's wait. Its screenshot is the one in
// docs/guides/real-engines-and-metrics.md (SURGE_ARTIFACTS=/tmp/a go test
// ./internal/experiment/burst/ -run QuotaReport; cp
// /tmp/a/quota-run.png docs/report-quota.png).
func TestQuotaReportInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("browser check skipped in -short mode")
	}
	_, dir, out := virtualBurst(t, func(c *Config) {
		c.BaselineRPS, c.Multipliers = 2, []float64{5}
		c.Warmup, c.Baseline, c.Burst, c.Recovery, c.RecoveryLimit = 10*time.Second, 90*time.Second, time.Minute, 2*time.Minute, 3*time.Minute
		c.Options.PromptTokens, c.Options.OutputTokens = workload.FixedLength(200), workload.FixedLength(50)
		c.Options.Sim.QuotaTokensPerMinute, c.Options.Sim.GatewayQueue = 60000, 50
	})
	html, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, s := range []string{`"id":"quota"`, `class="wf-row"`, `title="gateway: `, "tokens per minute remaining"} {
		if !strings.Contains(string(html), s) {
			t.Errorf("the page lacks %s", s)
		}
	}
	// The run's section alone: waterfall and charts, the tables hidden.
	runOnly := strings.Replace(string(html), "</head>", "<style>section.results{display:none}</style></head>", 1)
	page := filepath.Join(t.TempDir(), "run.html")
	if err := os.WriteFile(page, []byte(runOnly), 0o644); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(browsertest.ArtifactDir(t), "quota-run.png")
	dom := browsertest.Run(t, "--virtual-time-budget=5000", "--window-size=1300,2600", "--dump-dom", "--screenshot="+shot, "file://"+page)
	attrs := browsertest.BodyAttrs(t, dom)
	if e := attrs["data-js-errors"]; e != "" {
		t.Errorf("JavaScript errors: %s", e)
	}
	if want, drawn := attrs["data-charts-expected"], attrs["data-charts-drawn"]; drawn != want {
		t.Errorf("%s of %s charts drawn", drawn, want)
	}
	quota := false
	for _, c := range browsertest.ChartDivs(dom) {
		if ink, err := strconv.Atoi(c["data-ink"]); err != nil || ink < 5 {
			t.Errorf("chart %s: data-ink %q: the plot area is (nearly) blank", c["data-chart-id"], c["data-ink"])
		}
		quota = quota || c["data-chart-id"] == "quota"
	}
	if !quota {
		t.Error("no quota chart drawn")
	}
	browsertest.CheckShot(t, shot)
}

// TestHeaderQuota: a real endpoint's limits, from its baseline's headers,
// become the prediction's quota in requests: 60,000 tokens a minute at
// 250 tokens a request and 600 requests a minute bind at 4 req/s with a
// stock of 240; a day's bucket of 1,000,000 tokens allows only 0.046 req/s.
func TestHeaderQuota(t *testing.T) {
	o := DefaultConfig().Options
	o.PromptTokens, o.OutputTokens = workload.FixedLength(200), workload.FixedLength(50)
	var p predict.Params
	rl := analyze.RateLimitStats{LimitRequests: 600, LimitTokens: 60000, LimitTokensDay: -1}
	if !headerQuota(&p, &rl, o) || math.Abs(p.QuotaRate-4) > 0.01 || math.Abs(p.QuotaBurst-240) > 0.1 || p.QuotaQueue != 0 {
		t.Errorf("minute buckets: %+v", p)
	}
	rl.LimitTokensDay = 1_000_000
	if !headerQuota(&p, &rl, o) || math.Abs(p.QuotaRate-1e6/86400/250) > 1e-6 {
		t.Errorf("day bucket: rate %v", p.QuotaRate)
	}
	if headerQuota(&predict.Params{}, &analyze.RateLimitStats{LimitRequests: -1, LimitTokens: -1, LimitTokensDay: -1}, o) {
		t.Error("no limits named, yet a quota")
	}
}
