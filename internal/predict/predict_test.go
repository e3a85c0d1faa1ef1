package predict

import (
	"math"
	"strings"
	"testing"
	"time"
)

const s = time.Second

func TestPredict(t *testing.T) {
	seed := Params{Mu: 10, Lambda: 8, BurstRate: 20, BurstLen: 60 * s}
	with := func(f func(p *Params)) Params { p := seed; f(&p); return p }
	tests := []struct {
		name     string
		p        Params
		peak     float64
		peakAt   time.Duration
		recovery time.Duration
		drain    float64
		never    bool
		explain  []string
	}{
		{"docs/method.md §8 example", seed, 600, 60 * s, 300 * s, 2, false,
			[]string{"Peak backlog 600 requests, 1m0s after the burst start.", "Recovered 5m0s after the burst end.",
				"0s–1m0s (burst): 20 req/s in, 10 req/s out: the backlog grows at 10 req/s to 600.",
				"From 1m0s on (after the burst): 8 req/s in, 10 req/s out: the backlog drains at 2 req/s and is empty after 5m0s more."}},
		{"capacity rises to 16 at the burst end", with(func(p *Params) { p.BoostMu = 16 }), 600, 60 * s, 75 * s, 8, false,
			[]string{"Recovered 1m15s after the burst end.", "16 req/s out: the backlog drains at 8 req/s"}},
		{"boost given exactly at the burst end", with(func(p *Params) { p.BoostMu, p.BoostAt = 16, 60*s }), 600, 60 * s, 75 * s, 8, false, nil},
		// 0–30 s: +10/s → 300; 30–60 s: +(20 − 16)/s → 420; then 420 / (16 − 8) = 52.5 s
		{"boost mid-burst", with(func(p *Params) { p.BoostMu, p.BoostAt = 16, 30*s }), 420, 60 * s, 52500 * time.Millisecond, 8, false,
			[]string{"30s–1m0s (burst): 20 req/s in, 16 req/s out: the backlog grows at 4 req/s to 420."}},
		{"boost mid-burst above the burst rate drains during the burst", with(func(p *Params) { p.BoostMu, p.BoostAt = 40, 30*s }), 300, 30 * s, 0, 32, false,
			[]string{"30s–1m0s (burst): 20 req/s in, 40 req/s out: the backlog drains at 20 req/s and is empty after 15s."}},
		{"boost after the burst end", with(func(p *Params) { p.BoostMu, p.BoostAt = 16, 160*s }), 600, 60 * s, 100*s + 50*s, 8, false,
			// 60–160 s drains at 2/s → 400 left, then 8/s → 50 s more
			[]string{"1m0s–2m40s (after the burst): 8 req/s in, 10 req/s out: the backlog drains at 2 req/s to 400."}},
		{"late boost after the backlog already drained", with(func(p *Params) { p.BurstRate, p.BoostMu, p.BoostAt = 11, 16, 200*s }), 60, 60 * s, 30 * s, 8, false, nil},
		{"normal load at capacity never recovers", with(func(p *Params) { p.Lambda = 10 }), 600, 60 * s, 0, 0, true,
			[]string{"Never recovers: normal load 10 req/s ≥ capacity 10 req/s", "no headroom"}},
		{"normal load above capacity never recovers", with(func(p *Params) { p.Lambda = 12 }), 600, 60 * s, 0, -2, true, nil},
		{"a boost restores headroom", with(func(p *Params) { p.Lambda, p.BoostMu = 12, 16 }), 600, 60 * s, 150 * s, 4, false, nil},
		{"a boost below normal load does not", with(func(p *Params) { p.BoostMu = 6 }), 600, 60 * s, 0, -2, true, nil},
		{"burst below capacity", with(func(p *Params) { p.BurstRate = 9 }), 0, 0, 0, 2, false,
			[]string{"No backlog builds up. Recovered 0s after the burst end."}},
		{"burst exactly at capacity", with(func(p *Params) { p.BurstRate = 10 }), 0, 0, 0, 2, false, nil},
		{"no normal load", with(func(p *Params) { p.Lambda = 0 }), 600, 60 * s, 60 * s, 10, false, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pr, err := Predict(tc.p)
			if err != nil {
				t.Fatal(err)
			}
			if !approx(pr.PeakBacklog, tc.peak) || pr.PeakAt != tc.peakAt || pr.RecoveryTime != tc.recovery ||
				!approx(pr.DrainRate, tc.drain) || pr.Never != tc.never {
				t.Errorf("got peak %v at %v, recovery %v, drain %v, never %v; want %v at %v, %v, %v, %v\n%s",
					pr.PeakBacklog, pr.PeakAt, pr.RecoveryTime, pr.DrainRate, pr.Never,
					tc.peak, tc.peakAt, tc.recovery, tc.drain, tc.never, pr.Explanation)
			}
			for _, e := range tc.explain {
				if !strings.Contains(pr.Explanation, e) {
					t.Errorf("explanation lacks %q:\n%s", e, pr.Explanation)
				}
			}
		})
	}
}

func approx(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func TestValidate(t *testing.T) {
	ok := Params{Mu: 10, Lambda: 8, BurstRate: 20, BurstLen: time.Minute}
	tests := []struct {
		name string
		mod  func(p *Params)
		want string
	}{
		{"zero mu", func(p *Params) { p.Mu = 0 }, "predict: mu: must be > 0 req/s, got 0"},
		{"negative mu", func(p *Params) { p.Mu = -1 }, "predict: mu: must be > 0 req/s, got -1"},
		{"negative lambda", func(p *Params) { p.Lambda = -1 }, "predict: lambda: must be ≥ 0 req/s, got -1"},
		{"negative burst rate", func(p *Params) { p.BurstRate = -5 }, "predict: burst_rate: must be ≥ 0 req/s, got -5"},
		{"negative boost", func(p *Params) { p.BoostMu = -5 }, "predict: boost_mu: must be ≥ 0 req/s, got -5"},
		{"NaN lambda", func(p *Params) { p.Lambda = math.NaN() }, "predict: lambda: NaN is not a finite rate"},
		{"infinite burst", func(p *Params) { p.BurstRate = math.Inf(1) }, "predict: burst_rate: +Inf is not a finite rate"},
		{"zero burst length", func(p *Params) { p.BurstLen = 0 }, "predict: burst_len: must be > 0, got 0s"},
		{"negative boost time", func(p *Params) { p.BoostAt = -s }, "predict: boost_at: must be ≥ 0, got -1s"},
	}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid params: %v", err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := ok
			tc.mod(&p)
			err := p.Validate()
			if err == nil || err.Error() != tc.want {
				t.Fatalf("Validate = %v, want %q", err, tc.want)
			}
			if _, err := Predict(p); err == nil {
				t.Errorf("Predict accepted invalid params")
			}
			if _, err := Timeline(p, s); err == nil {
				t.Errorf("Timeline accepted invalid params")
			}
		})
	}
	err := Params{}.Validate()
	for _, field := range []string{"mu:", "burst_len:"} {
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("zero Params: %v, want it to name %s", err, field)
		}
	}
}

func TestTimeline(t *testing.T) {
	p := Params{Mu: 10, Lambda: 8, BurstRate: 20, BurstLen: 60 * s, BoostMu: 16}
	pts, err := Timeline(p, 10*s)
	if err != nil {
		t.Fatal(err)
	}
	want := map[time.Duration]float64{0: 0, 30 * s: 300, 60 * s: 600, 100 * s: 280, 135 * s: 0, 140 * s: 0}
	got := map[time.Duration]float64{}
	for i, pt := range pts {
		got[pt.T] = pt.Backlog
		if i > 0 && pt.T <= pts[i-1].T {
			t.Fatalf("points not strictly increasing at %d: %v", i, pts)
		}
	}
	for at, b := range want {
		if v, ok := got[at]; !ok || !approx(v, b) {
			t.Errorf("backlog at %v = %v (present %v), want %v", at, v, ok, b)
		}
	}
	if last := pts[len(pts)-1]; last.T != 145*s || last.Backlog != 0 {
		t.Errorf("last point %+v, want 0 at 2m25s (drained at 2m15s, plus one step)", last)
	}
	// Never: the chart covers the burst and four burst lengths after it.
	never, err := Timeline(Params{Mu: 10, Lambda: 12, BurstRate: 20, BurstLen: 60 * s}, 30*s)
	if err != nil {
		t.Fatal(err)
	}
	if last := never[len(never)-1]; last.T != 300*s || !approx(last.Backlog, 600+240*2) {
		t.Errorf("never: last point %+v, want 1080 at 5m0s (still growing at 2 req/s)", last)
	}
	// sad paths
	if _, err := Timeline(p, 0); err == nil || !strings.Contains(err.Error(), "step must be > 0") {
		t.Errorf("zero step: %v", err)
	}
	if _, err := Timeline(p, time.Microsecond); err == nil || !strings.Contains(err.Error(), "more than 100000 points") {
		t.Errorf("tiny step: %v", err)
	}
}

// With a timeout the backlog that will be served is capped at μ·T: the
// arrivals past it give up, and the drain starts from the cap.
func TestPredictAbandonment(t *testing.T) {
	base := Params{Mu: 9.14, Lambda: 4, BurstLen: 60 * time.Second, Patience: 60 * time.Second}
	for _, c := range []struct {
		burst            float64
		recovery         float64 // seconds
		abandoned, peak  float64
		explanationParts []string
	}{
		// 10×: the cap 548.4 is reached at 548.4/30.86 = 17.8 s; 30.86 req/s
		// give up for the remaining 42.2 s; the drain takes 548.4/5.14 s.
		{40, 548.4 / 5.14, 30.86 * (60 - 548.4/30.86), 548.4, []string{"patience cap 548.4", "give up (1303 of them)", "About 1303 requests give up after waiting 1m0s"}},
		// 5×: 651.5 would exceed the cap too, from 50.5 s on.
		{20, 548.4 / 5.14, 10.86 * (60 - 548.4/10.86), 548.4, []string{"patience cap 548.4"}},
		// 3×: 2.86 req/s for 60 s = 171.6 stays under the cap: no one gives up.
		{12, 171.6 / 5.14, 0, 171.6, nil},
	} {
		p := base
		p.BurstRate = c.burst
		pr, err := Predict(p)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(pr.RecoveryTime.Seconds()-c.recovery) > 0.01 || math.Abs(pr.Abandoned-c.abandoned) > 0.01 || math.Abs(pr.PeakBacklog-c.peak) > 0.01 {
			t.Errorf("burst %v: recovery %v abandoned %v peak %v, want %.2fs %.2f %.2f", c.burst, pr.RecoveryTime, pr.Abandoned, pr.PeakBacklog, c.recovery, c.abandoned, c.peak)
		}
		for _, part := range c.explanationParts {
			if !strings.Contains(pr.Explanation, part) {
				t.Errorf("burst %v: explanation lacks %q:\n%s", c.burst, part, pr.Explanation)
			}
		}
		// The peak is first reached when the cap fills, not at the burst end.
		if wantAt := math.Min(60, c.peak/(c.burst-9.14)); math.Abs(pr.PeakAt.Seconds()-wantAt) > 0.01 {
			t.Errorf("burst %v: peak at %v, want %.2fs", c.burst, pr.PeakAt, wantAt)
		}
		if c.abandoned == 0 && strings.Contains(pr.Explanation, "give up") {
			t.Errorf("burst %v: nobody gives up, yet: %s", c.burst, pr.Explanation)
		}
		// The timeline follows the cap.
		pts, err := Timeline(p, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		for _, pt := range pts {
			if pt.Backlog > 9.14*60+1e-9 {
				t.Fatalf("burst %v: timeline at %v: backlog %v above the cap", c.burst, pt.T, pt.Backlog)
			}
		}
		// Without patience the same burst never drains faster.
		p.Patience = 0
		free, _ := Predict(p)
		if free.RecoveryTime < pr.RecoveryTime || free.Abandoned != 0 {
			t.Errorf("burst %v: without patience recovery %v (abandoned %v), with %v", c.burst, free.RecoveryTime, free.Abandoned, pr.RecoveryTime)
		}
	}
	if err := (Params{Mu: 1, BurstLen: time.Second, Patience: -time.Second}).Validate(); err == nil || !strings.Contains(err.Error(), "patience") {
		t.Errorf("a negative patience: %v", err)
	}
}

// TestQuotaBindsRecovery: the package doc's example. A quota of 4 req/s
// with a stock of 240, a 60 s burst at 10 req/s over 2 req/s, a queue of
// 50: the bucket empties at 240 / (10 − 4) = 40 s, the queue fills, and it
// drains at 4 − 2 = 2 req/s: 25 s, however fast the engine is.
func TestQuotaBindsRecovery(t *testing.T) {
	p := Params{Mu: 28, Lambda: 2, BurstRate: 10, BurstLen: 60 * time.Second, QuotaRate: 4, QuotaBurst: 240, QuotaQueue: 50}
	pr, err := Predict(p)
	if err != nil {
		t.Fatal(err)
	}
	if got := pr.RecoveryTime.Seconds(); math.Abs(got-25) > 0.1 {
		t.Errorf("recovery %.2fs, want 25s: %s", got, pr.Explanation)
	}
	// Refused: after the queue fills at 40 + 50/6 s, 6 req/s are turned away until the end.
	if want := 6 * (20 - 50.0/6); math.Abs(pr.Rejected-want) > 1 {
		t.Errorf("refused %.1f, want %.1f", pr.Rejected, want)
	}
	if pr.DrainRate != 2 || pr.Never {
		t.Errorf("drain %v never %v", pr.DrainRate, pr.Never)
	}
	// Without a queue nothing waits: the burst's excess is refused, and
	// the baseline fits in the refill at once.
	p.QuotaQueue = 0
	if pr, _ := Predict(p); pr.RecoveryTime != 0 || pr.Never {
		t.Errorf("no queue: recovery %v never %v", pr.RecoveryTime, pr.Never)
	}
	// An engine slower than the quota binds instead: the fluid model's drain.
	p.QuotaQueue, p.Mu = 50, 3
	if pr, _ := Predict(p); pr.DrainRate != 1 {
		t.Errorf("engine binds: drain %v, want 3 − 2 = 1", pr.DrainRate)
	}
	// A baseline above the refill never recovers.
	p.Mu, p.Lambda = 28, 5
	if pr, _ := Predict(p); !pr.Never {
		t.Errorf("baseline over the quota recovers: %s", pr.Explanation)
	}
	if err := (Params{Mu: 1, BurstLen: time.Second, QuotaRate: 1, QuotaBurst: 0}).Validate(); err == nil || !strings.Contains(err.Error(), "quota_burst") {
		t.Errorf("quota without stock: %v", err)
	}
}
