package sim

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// fastConfig is DefaultConfig with an engine ten times faster (every step
// cost divided by 10) and room for a bigger batch (max_num_seqs 512, 8× the
// KV cache): far above 40 requests/s of the chat workload.
func fastConfig() Config {
	cfg := DefaultConfig()
	cfg.StepBase /= 10
	cfg.StepPerDecodeSeq /= 10
	cfg.StepPerPrefillToken /= 10
	cfg.MaxNumSeqs, cfg.MaxNumBatchedTokens = 512, 8192
	cfg.KVCacheTokens *= 8
	return cfg
}

// overloadMu measures μ without Capacity's code: Simulate under a constant
// overload of rate requests/s for total, completions per second in
// [total/4, total).
func overloadMu(t *testing.T, cfg Config, r Request, rate float64, total time.Duration) float64 {
	t.Helper()
	c, err := NewCluster(cfg)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, o := range Simulate(c, constArrivals(0, rate, total, r), 0, 0, nil) {
		if o.DoneAt >= total/4 && o.DoneAt < total {
			n++
		}
	}
	return float64(n) / (total - total/4).Seconds()
}

func always(r Request) func(int) Request { return func(int) Request { return r } }

func TestCapacity(t *testing.T) {
	long := Request{PromptTokens: 500, MaxTokens: 4000, IgnoreEOS: true}
	natural := Request{PromptTokens: 500, MaxTokens: 300} // lognormal lengths, mean 150, capped at 300
	short := Request{PromptTokens: 500, MaxTokens: 60, IgnoreEOS: true}
	for _, tc := range []struct {
		name string
		cfg  Config
		req  Request
		ref  func(t *testing.T) float64 // μ measured independently
		tol  float64
	}{
		// The calibration the package doc quotes (TestCalibration).
		{"default", DefaultConfig(), chat, func(t *testing.T) float64 { return measureMu(t, DefaultConfig()) }, 0.03},
		{"fast engine", fastConfig(), chat, func(t *testing.T) float64 { return overloadMu(t, fastConfig(), chat, 250, 400*time.Second) }, 0.03},
		// 4,000 output tokens: ~85 s in the batch, so 120 s is too short (step 2).
		{"long outputs", DefaultConfig(), long, func(t *testing.T) float64 { return overloadMu(t, DefaultConfig(), long, 0.5, 3600*time.Second) }, 0.05},
		// μ ≈ 13.3: the first saturated trial (16 req/s) is below 1.25 μ (step 3).
		{"short outputs", DefaultConfig(), short, func(t *testing.T) float64 { return overloadMu(t, DefaultConfig(), short, 20, 600*time.Second) }, 0.03},
		{"natural lengths", DefaultConfig(), natural, func(t *testing.T) float64 {
			return overloadMu(t, DefaultConfig(), natural, 20, 600*time.Second)
		}, 0.03},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Capacity(tc.cfg, always(tc.req))
			if err != nil {
				t.Fatal(err)
			}
			ref := tc.ref(t)
			t.Logf("μ = %.4g req/s (reference %.4g) after %d trials; accepted: %v", res.RPS, ref, len(res.Trials), res.CapacityTrial)
			if !within(res.RPS, ref, tc.tol) {
				t.Errorf("μ = %.4g req/s, want %.4g ± %.0f%%", res.RPS, ref, 100*tc.tol)
			}
			if !res.Saturated || res.Turnovers < 10 || res.OfferedRPS < 1.25*res.RPS {
				t.Errorf("accepted a trial that fails the acceptance rule: %v", res.CapacityTrial)
			}
			if got := res.Trials[len(res.Trials)-1]; got != res.CapacityTrial {
				t.Errorf("accepted %v, but the last trial is %v", res.CapacityTrial, got)
			}
			// The saturation verdict of every trial agrees with the true μ:
			// clearly below it the engine keeps up, clearly above it queues.
			for _, tr := range res.Trials {
				if tr.OfferedRPS < 0.95*ref && tr.Saturated || tr.OfferedRPS > 1.1*ref && !tr.Saturated {
					t.Errorf("μ ≈ %.4g req/s, yet trial %v", ref, tr)
				}
			}
		})
	}
}

// TestCapacityDefaultSearch pins the search the Capacity doc describes for
// the default configuration.
func TestCapacityDefaultSearch(t *testing.T) {
	res, err := Capacity(DefaultConfig(), always(chat))
	if err != nil {
		t.Fatal(err)
	}
	type step struct {
		rate      float64
		window    time.Duration
		saturated bool
	}
	want := []step{
		{1, 120 * time.Second, false}, {2, 120 * time.Second, false}, {4, 120 * time.Second, false}, {8, 120 * time.Second, false},
		{16, 120 * time.Second, true}, {16, 240 * time.Second, true},
	}
	var got []step
	for _, tr := range res.Trials {
		got = append(got, step{tr.OfferedRPS, tr.Window, tr.Saturated})
	}
	if len(got) != len(want) {
		t.Fatalf("trials %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("trials %v, want %v", got, want)
		}
	}
	if tr := res.Trials[4]; tr.Turnovers >= 10 {
		t.Errorf("the 120 s trial at 16 req/s has %.1f turnovers; the doc says it is too short", tr.Turnovers)
	}
}

// TestCapacityFastEngine is the case a fixed probe of 40 req/s gets wrong:
// it does not saturate the fast engine and its completion rate is just the
// offered 40 req/s. Capacity keeps raising the load.
func TestCapacityFastEngine(t *testing.T) {
	cfg := fastConfig()
	probe, err := capacityTrial(cfg, always(chat), 40, 120*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if probe.Saturated || !within(probe.RPS, 40, 0.02) {
		t.Fatalf("fixed 40 req/s probe: %v; the example needs an unsaturated probe that reports ≈ 40", probe)
	}
	res, err := Capacity(cfg, always(chat))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("fixed probe: %v; Capacity: μ = %.4g req/s", probe, res.RPS)
	if !res.Saturated || res.RPS < 100 {
		t.Errorf("μ = %.4g req/s, saturated %t: want well above the probe's 40 req/s", res.RPS, res.Saturated)
	}
}

func TestCapacityReplicas(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cfg      Config
		replicas int
	}{
		{"default", DefaultConfig(), 2},
		{"default", DefaultConfig(), 3},
		{"fast engine", fastConfig(), 4}, // ≈ 1,024 req/s at the accepted trial
	} {
		t.Run(fmt.Sprintf("%s×%d", tc.name, tc.replicas), func(t *testing.T) {
			one, err := Capacity(tc.cfg, always(chat))
			if err != nil {
				t.Fatal(err)
			}
			cfg := tc.cfg
			cfg.Replicas = tc.replicas
			res, err := Capacity(cfg, always(chat))
			if err != nil {
				t.Fatal(err)
			}
			n := float64(tc.replicas)
			t.Logf("μ = %.4g req/s (%.3f × one replica's %.4g)", res.RPS, res.RPS/one.RPS, one.RPS)
			if !within(res.RPS, n*one.RPS, 0.03) {
				t.Errorf("μ = %.4g req/s, want %v × %.4g ± 3%%", res.RPS, n, one.RPS)
			}
			if res.Trials[0].OfferedRPS != n {
				t.Errorf("first trial at %v req/s, want 1 req/s per replica", res.Trials[0].OfferedRPS)
			}
		})
	}
}

// TestCapacityVerdict checks the saturation verdict on trials where one of
// its two clauses alone would be fooled.
func TestCapacityVerdict(t *testing.T) {
	t.Run("queue at every sample, engine keeping up", func(t *testing.T) {
		// Arrivals 30 µs apart, steps of a few ms: every sample finds the
		// requests that arrived during the step in progress, yet the engine
		// completes everything offered (μ ≈ 63,000 req/s).
		tr, err := capacityTrial(fastConfig(), always(Request{PromptTokens: 1, MaxTokens: 1}), 32768, 4*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if tr.MinWaiting < 1 || !within(tr.RPS, tr.OfferedRPS, 0.01) {
			t.Fatalf("%v: the example needs a queue at every sample and completions ≈ arrivals", tr)
		}
		if tr.Saturated {
			t.Errorf("judged saturated: %v", tr)
		}
	})
	t.Run("backlog draining", func(t *testing.T) {
		// 100 long prompts first leave a backlog that 8 req/s of chat (μ ≈ 9.9)
		// drains: a queue at every sample, but shrinking.
		big := Request{PromptTokens: 4000, MaxTokens: 10, IgnoreEOS: true}
		tr, err := capacityTrial(DefaultConfig(), func(i int) Request {
			if i < 100 {
				return big
			}
			return chat
		}, 8, 120*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if tr.MinWaiting < 1 || tr.WaitingEnd >= tr.WaitingStart {
			t.Fatalf("%v: the example needs a queue at every sample that shrinks", tr)
		}
		if tr.Saturated {
			t.Errorf("judged saturated: %v", tr)
		}
	})
	t.Run("scan around μ", func(t *testing.T) {
		res, err := Capacity(DefaultConfig(), always(chat))
		if err != nil {
			t.Fatal(err)
		}
		mu, grewOnly := res.RPS, 0
		for f := 0.5; f < 2; f += 0.01 {
			tr, err := capacityTrial(DefaultConfig(), always(chat), f*mu, 120*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if tr.WaitingEnd > tr.WaitingStart && tr.MinWaiting == 0 {
				grewOnly++
			}
			if f < 0.97 && tr.Saturated || f > 1.05 && !tr.Saturated {
				t.Errorf("λ = %.2f μ: %v", f, tr)
			}
		}
		if grewOnly == 0 {
			t.Error("no trial where the queue grew without persisting: the scan does not test the every-sample clause")
		}
	})
}

// TestCapacityLimits runs the search within smaller bounds, to reach the
// paths the default bounds keep for extreme configurations.
func TestCapacityLimits(t *testing.T) {
	lim := defaultCapacityLimits
	lim.arrivals = 1024 // T = 64 s at 16 req/s: too short, step 2 doubles A too
	res, err := capacity(DefaultConfig(), always(chat), lim)
	if err != nil {
		t.Fatal(err)
	}
	want, err := Capacity(DefaultConfig(), always(chat))
	if err != nil {
		t.Fatal(err)
	}
	if !within(res.RPS, want.RPS, 0.03) || res.Trials[4].Window >= 120*time.Second {
		t.Errorf("with A = 1024: %v; want μ ≈ %.4g with a first saturated trial shorter than 120 s", res, want.RPS)
	}

	lim = defaultCapacityLimits
	lim.maxRPS = 8
	if _, err := capacity(DefaultConfig(), always(chat), lim); err == nil || err.Error() != "sim: capacity: the engine never saturated up to 8 req/s" {
		t.Errorf("bound below μ: error %v", err)
	}
	lim.maxRPS = 19 // 16 req/s saturates; the 1.5 μ retry needs 19.9 (see short outputs)
	if _, err := capacity(DefaultConfig(), always(Request{PromptTokens: 500, MaxTokens: 60, IgnoreEOS: true}), lim); err == nil ||
		!strings.HasPrefix(err.Error(), "sim: capacity: the search needs 19.9") || !strings.HasSuffix(err.Error(), "above its bound of 19 req/s") {
		t.Errorf("retry above the bound: error %v", err)
	}

	lim = defaultCapacityLimits
	lim.maxTrials = 5
	res, err = capacity(DefaultConfig(), always(chat), lim)
	if err == nil || !strings.HasPrefix(err.Error(), "sim: capacity: no saturated, stable trial in 5 trials (last: λ = 16 req/s for 2m0s") {
		t.Errorf("5 trials: error %v", err)
	}
	if len(res.Trials) != 5 || !res.Saturated || res.Turnovers >= 10 {
		t.Errorf("5 trials: %v", res)
	}
}

// TestCapacityIgnoresAdmissionAutoscaleFaults checks that the autoscaler,
// max_waiting and the 500/503 faults are switched off: each would otherwise
// refuse, fail or add capacity, and change the search. (The stream faults,
// reset, malformed, stall and slow headers, are plans a client enacts; with
// no client they cannot change the engine, so they have no case here.)
func TestCapacityIgnoresAdmissionAutoscaleFaults(t *testing.T) {
	base, err := Capacity(DefaultConfig(), always(chat))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		set  func(*Config)
	}{
		{"max_waiting", func(c *Config) { c.MaxWaiting = 5 }},
		{"autoscale", func(c *Config) { c.Autoscale, c.MaxReplicas, c.ScaleUpHold = true, 4, 0 }},
		{"fault_500", func(c *Config) { c.Fault500 = 0.3 }},
		{"fault_503", func(c *Config) { c.Fault503 = 0.3 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tc.set(&cfg)
			res, err := Capacity(cfg, always(chat))
			if err != nil {
				t.Fatal(err)
			}
			if res.CapacityTrial != base.CapacityTrial || len(res.Trials) != len(base.Trials) {
				t.Errorf("%v, want %v as with the defaults", res, base)
			}
		})
	}
}

func TestCapacityErrors(t *testing.T) {
	tooLong := Request{PromptTokens: DefaultMaxModelLen, MaxTokens: 10}
	huge := DefaultConfig() // an engine no load up to 10⁵ req/s can saturate
	huge.StepBase, huge.StepPerDecodeSeq, huge.StepPerPrefillToken = time.Microsecond, 0, 0
	huge.MaxNumSeqs, huge.MaxNumBatchedTokens = 2048, 4096
	bad := DefaultConfig()
	bad.MaxNumSeqs = 0
	for _, tc := range []struct {
		name   string
		cfg    Config
		next   func(int) Request
		want   string
		is     error
		trials int
	}{
		{"prompt beyond max_model_len", DefaultConfig(), always(tooLong),
			"sim: capacity: request 0: sim: invalid request: prompt_tokens 8192 + max_tokens 10 = 8202 exceeds max_model_len 8192", ErrInvalidRequest, 0},
		{"one invalid request among valid ones", DefaultConfig(), func(i int) Request {
			if i == 1000 { // in the fifth trial (16 req/s)
				return tooLong
			}
			return chat
		}, "sim: capacity: request 1000: sim: invalid request: prompt_tokens 8192 + max_tokens 10 = 8202 exceeds max_model_len 8192", ErrInvalidRequest, 4},
		{"never saturated", huge, always(Request{PromptTokens: 1, MaxTokens: 1}),
			"sim: capacity: the engine never saturated up to 6.554e+04 req/s", nil, 17},
		{"invalid config", bad, always(chat), "sim: max_num_seqs: must be ≥ 1, got 0", nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Capacity(tc.cfg, tc.next)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %v does not wrap %v", err, tc.is)
			}
			if len(res.Trials) != tc.trials {
				t.Errorf("%d trials in the result, want %d", len(res.Trials), tc.trials)
			}
			if res.Saturated {
				t.Errorf("the result of a failed search says saturated: %v", res.CapacityTrial)
			}
		})
	}
}

func TestCapacityString(t *testing.T) {
	res, err := Capacity(DefaultConfig(), always(chat))
	if err != nil {
		t.Fatal(err)
	}
	got := res.String()
	for _, want := range []string{"μ = 9.867 req/s", "6 trials", "λ = 16 req/s for 4m0s", "saturated true"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
}

// A cluster scaling from zero has the capacity of the replica it starts,
// not an error for having none at time 0.
func TestCapacityScaleFromZero(t *testing.T) {
	one := DefaultConfig()
	zero := one
	zero.Autoscale, zero.MinReplicas = true, 0
	next := func(int) Request { return Request{PromptTokens: 500, MaxTokens: 150, IgnoreEOS: true} }
	a, err := Capacity(one, next)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Capacity(zero, next)
	if err != nil {
		t.Fatalf("scale from zero: %v", err)
	}
	if a.RPS != b.RPS {
		t.Fatalf("μ %v scaling from zero, %v with one replica", b.RPS, a.RPS)
	}
}
