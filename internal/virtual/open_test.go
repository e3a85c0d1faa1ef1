package virtual

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/schedule"
	"github.com/surge-bench/surge/internal/scrape"
	"github.com/surge-bench/surge/internal/sim"
)

// Below capacity every arrival gets exactly one record, in schedule order,
// complete and good, with the ideal client's times.
func TestOpenBelowCapacity(t *testing.T) {
	arr := constant(t, "p", 2, 30*time.Second)
	out, err := Open(context.Background(), baseConfig(), fixedGen(t, 200, 50), arr, 30*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(arr) != 60 || len(out.Records) != len(arr) {
		t.Fatalf("%d records for %d arrivals", len(out.Records), len(arr))
	}
	var lastDone int64
	for i, r := range out.Records {
		a := arr[i]
		at := int64(a.At)
		if r.ID != fmt.Sprintf("run-%d", a.Seq) || r.Seq != a.Seq || r.Phase != "p" || r.ScheduledNs != at {
			t.Fatalf("record %d: id %q seq %d phase %q scheduled %d, arrival %+v", i, r.ID, r.Seq, r.Phase, r.ScheduledNs, a)
		}
		if r.SentNs != at || r.ConnNs != at || r.HeadersNs != at {
			t.Errorf("seq %d: sent %d conn %d headers %d, want all %d (ideal client)", r.Seq, r.SentNs, r.ConnNs, r.HeadersNs, at)
		}
		if r.Outcome != record.OK || r.Status != 200 || !r.Good || r.Error != "" || !r.UsageFromServer {
			t.Errorf("seq %d: outcome %s status %d good %v error %q", r.Seq, r.Outcome, r.Status, r.Good, r.Error)
		}
		if r.Profile != "fixed" || r.MaxTokens != 50 || r.OutputTokens != 50 || r.Chunks != 50 || r.PromptTokens != 200 || r.Attempts != 1 || r.Replica != "r0" {
			t.Errorf("seq %d: %+v", r.Seq, r)
		}
		if !(at < r.FirstTokenNs && r.FirstTokenNs < r.DoneNs) || r.FirstChunkNs != r.FirstTokenNs {
			t.Errorf("seq %d: scheduled %d, first token %d, done %d", r.Seq, at, r.FirstTokenNs, r.DoneNs)
		}
		if want := (r.DoneNs - r.FirstTokenNs) / 49; r.TPOTNs != want || r.ITLMaxNs <= 0 {
			t.Errorf("seq %d: TPOT %d, want %d; ITL max %d", r.Seq, r.TPOTNs, want, r.ITLMaxNs)
		}
		lastDone = max(lastDone, r.DoneNs)
	}
	if w := out.QueueWaits["p"].QueueWait(); w.Count != float64(len(arr)) || w.P99Ms > 100 || w.MeanMs < 0 || len(out.QueueWaits) != 1 {
		t.Errorf("queue waits %+v in %d phases, want %d waits in [0, 100] ms in phase p only", w, len(out.QueueWaits), len(arr))
	}
	if out.StoppedAt != 0 || out.StopWhy != "" || len(out.Events) != 0 {
		t.Errorf("stopped at %v (%q), events %v", out.StoppedAt, out.StopWhy, out.Events)
	}
	// Samples every second from 0, the last one after the last completion.
	for i, s := range out.Engine {
		if s.TNs != int64(i)*int64(time.Second) {
			t.Fatalf("sample %d at %d ns, want %d s", i, s.TNs, i)
		}
	}
	last := out.Engine[len(out.Engine)-1]
	if last.TNs < lastDone || last.Success != float64(len(arr)) || last.Waiting != 0 || last.Running != 0 {
		t.Errorf("last sample %+v; last completion at %d", last, lastDone)
	}
}

// Good is analyze.Judge against Config.Deadlines: a request is good when it
// is ok and meets every deadline that is set.
func TestOpenGoodFollowsDeadlines(t *testing.T) {
	arr, err := schedule.Build(schedule.Plan{Phases: []schedule.Phase{{Name: "p", Duration: time.Minute, Rate: 6}}}, 3)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := Open(context.Background(), Config{Sim: sim.DefaultConfig(), Run: "r"}, chatGen(t, 1), arr, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ttfts, e2es []int64
	for _, r := range ref.Records {
		ttfts, e2es = append(ttfts, r.TTFTSchedule()), append(e2es, r.E2ESchedule())
	}
	slices.Sort(ttfts)
	slices.Sort(e2es)
	medTTFT, medE2E := time.Duration(ttfts[len(ttfts)/2]), time.Duration(e2es[len(e2es)/2])
	cases := []struct {
		name string
		d    analyze.Deadlines
		good func(r *record.Record) bool
	}{
		{"no deadlines", analyze.Deadlines{}, func(*record.Record) bool { return true }},
		{"generous", analyze.Deadlines{TTFT: time.Hour, E2E: time.Hour}, func(*record.Record) bool { return true }},
		{"ttft 1 ns", analyze.Deadlines{TTFT: 1}, func(*record.Record) bool { return false }},
		{"e2e 1 ns", analyze.Deadlines{E2E: 1}, func(*record.Record) bool { return false }},
		{"median ttft", analyze.Deadlines{TTFT: medTTFT}, func(r *record.Record) bool { return r.TTFTSchedule() <= int64(medTTFT) }},
		{"median ttft and e2e", analyze.Deadlines{TTFT: medTTFT, E2E: medE2E}, func(r *record.Record) bool {
			return r.TTFTSchedule() <= int64(medTTFT) && r.E2ESchedule() <= int64(medE2E)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Open(context.Background(), Config{Sim: sim.DefaultConfig(), Run: "r", Deadlines: tc.d}, chatGen(t, 1), arr, time.Minute, nil)
			if err != nil {
				t.Fatal(err)
			}
			good := 0
			for i := range out.Records {
				r := &out.Records[i]
				if r.Outcome != record.OK {
					t.Fatalf("seq %d: %s", r.Seq, r.Outcome)
				}
				if want := tc.good(r); r.Good != want {
					t.Errorf("seq %d (TTFT %v, E2E %v): good %v, want %v", r.Seq, time.Duration(r.TTFTSchedule()), time.Duration(r.E2ESchedule()), r.Good, want)
				}
				if r.Good {
					good++
				}
			}
			t.Logf("%d of %d good", good, len(out.Records))
		})
	}
}

// A request not complete at scheduled + timeout is a timeout that ends
// exactly then, with the tokens it had received.
func TestOpenTimeout(t *testing.T) {
	arr := constant(t, "p", 1, 10*time.Second)
	cases := []struct {
		name    string
		timeout time.Duration
		want    record.Outcome
	}{
		{"timeout shorter than the answers", 3 * time.Second, record.Timeout},
		{"timeout longer than the answers", time.Minute, record.OK},
		{"no timeout", 0, record.OK},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := baseConfig()
			cfg.Timeout = tc.timeout
			// 500 tokens at ≥ 20 ms a step: ≥ 10 s per answer.
			out, err := Open(context.Background(), cfg, fixedGen(t, 100, 500), arr, 10*time.Second, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Records) != len(arr) {
				t.Fatalf("%d records for %d arrivals", len(out.Records), len(arr))
			}
			for _, r := range out.Records {
				if r.Outcome != tc.want {
					t.Fatalf("seq %d: outcome %s, want %s", r.Seq, r.Outcome, tc.want)
				}
				switch tc.want {
				case record.Timeout:
					if r.DoneNs != r.ScheduledNs+int64(tc.timeout) || r.Error != "timeout after 3s" || r.Good || r.Status != 200 {
						t.Errorf("seq %d: done %d (scheduled %d), error %q, good %v, status %d", r.Seq, r.DoneNs, r.ScheduledNs, r.Error, r.Good, r.Status)
					}
					if !(r.OutputTokens > 0 && r.OutputTokens < 500) || r.FirstTokenNs > r.DoneNs || r.TPOTNs != record.None {
						t.Errorf("seq %d: %d tokens, first token %d, done %d, TPOT %d", r.Seq, r.OutputTokens, r.FirstTokenNs, r.DoneNs, r.TPOTNs)
					}
				case record.OK:
					if r.OutputTokens != 500 || r.E2ESchedule() < int64(3*time.Second) {
						t.Errorf("seq %d: %d tokens in %v", r.Seq, r.OutputTokens, time.Duration(r.E2ESchedule()))
					}
				}
			}
		})
	}
}

// Every outcome the engine model produces is recorded as the HTTP client
// would record it.
func TestOpenOutcomes(t *testing.T) {
	none := record.None
	cases := []struct {
		name    string
		edit    func(*Config)
		arrival []schedule.Arrival // nil = 20 arrivals at 2/s
		// match reports whether r is the case's kind of record; check then
		// tests it. At least one record must match.
		match func(r *record.Record) bool
		check func(r *record.Record) error
	}{
		{"500", func(c *Config) { c.Sim.Fault500 = 1 }, nil,
			func(r *record.Record) bool { return true },
			func(r *record.Record) error {
				if r.Outcome != record.HTTPError || r.Status != 500 || r.Error != "status 500" || r.DoneNs != r.ScheduledNs || r.HeadersNs != r.ScheduledNs || r.FirstTokenNs != none || r.Good {
					return fmt.Errorf("%+v", *r)
				}
				return nil
			}},
		{"503", func(c *Config) { c.Sim.Fault503 = 1 }, nil,
			func(r *record.Record) bool { return true },
			func(r *record.Record) error {
				if r.Outcome != record.HTTPError || r.Status != 503 || r.Error != "status 503" || r.DoneNs != r.ScheduledNs {
					return fmt.Errorf("%+v", *r)
				}
				return nil
			}},
		{"429", func(c *Config) { c.Sim.MaxWaiting, c.Sim.MaxNumSeqs, c.Sim.MaxNumBatchedTokens = 1, 1, 2048 }, constant(t, "p", 50, time.Second),
			func(r *record.Record) bool { return r.Status == 429 },
			func(r *record.Record) error {
				if r.Outcome != record.RateLimited || r.Error != "status 429" || r.DoneNs != r.ScheduledNs || r.HeadersNs != r.DoneNs || r.RetryAfterNs < int64(time.Second) || r.Good {
					return fmt.Errorf("%+v", *r)
				}
				return nil
			}},
		{"reset", func(c *Config) { c.Sim.FaultReset = 1 }, nil,
			func(r *record.Record) bool { return true },
			func(r *record.Record) error {
				if r.Outcome != record.StreamError || r.Status != 200 || r.Error != "stream broken (injected fault)" || r.OutputTokens >= 50 || r.DoneNs == none || r.Good {
					return fmt.Errorf("%+v", *r)
				}
				return nil
			}},
		{"malformed", func(c *Config) { c.Sim.FaultMalformed = 1 }, nil,
			func(r *record.Record) bool { return true },
			func(r *record.Record) error {
				if r.Outcome != record.StreamError || r.OutputTokens >= 50 {
					return fmt.Errorf("%+v", *r)
				}
				return nil
			}},
		{"stall", func(c *Config) { c.Sim.FaultStall, c.Sim.FaultStallDelay = 1, 2*time.Second }, nil,
			func(r *record.Record) bool { return r.OutputTokens >= 2 },
			func(r *record.Record) error {
				if r.Outcome != record.OK || r.ITLMaxNs < int64(2*time.Second) && r.FirstTokenNs-r.ScheduledNs < int64(2*time.Second) {
					return fmt.Errorf("no 2 s stall: %+v", *r)
				}
				return nil
			}},
		{"slow headers", func(c *Config) { c.Sim.FaultSlowHeaders, c.Sim.FaultSlowHeadersDelay = 1, time.Second }, nil,
			func(r *record.Record) bool { return true },
			func(r *record.Record) error {
				if r.Outcome != record.OK || r.TTFTSchedule() < int64(time.Second) {
					return fmt.Errorf("%+v", *r)
				}
				return nil
			}},
		{"slow headers past the timeout", func(c *Config) {
			c.Sim.FaultSlowHeaders, c.Sim.FaultSlowHeadersDelay, c.Timeout = 1, 5*time.Second, 2*time.Second
		}, nil,
			func(r *record.Record) bool { return true },
			func(r *record.Record) error {
				if r.Outcome != record.Timeout || r.Status != 0 || r.HeadersNs != none || r.FirstTokenNs != none || r.DoneNs != r.ScheduledNs+int64(2*time.Second) {
					return fmt.Errorf("%+v", *r)
				}
				return nil
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := baseConfig()
			tc.edit(&cfg)
			arr := tc.arrival
			if arr == nil {
				arr = constant(t, "p", 2, 10*time.Second)
			}
			out, err := Open(context.Background(), cfg, fixedGen(t, 100, 50), arr, 10*time.Second, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Records) != len(arr) {
				t.Fatalf("%d records for %d arrivals", len(out.Records), len(arr))
			}
			matched := 0
			for i := range out.Records {
				r := &out.Records[i]
				if !tc.match(r) {
					continue
				}
				matched++
				if err := tc.check(r); err != nil {
					t.Errorf("seq %d: %v", r.Seq, err)
				}
			}
			if matched == 0 {
				t.Fatal("no record of the case's kind")
			}
		})
	}
}

// Queue waits are the admission − scheduled times: on a one-slot engine
// the second of two simultaneous requests waits until the first ended.
// Each phase's go into a histogram (µs, 3 significant digits; the mean
// exact). Phases none of whose requests was admitted are absent.
func TestOpenQueueWaits(t *testing.T) {
	cfg := baseConfig()
	cfg.Sim.MaxNumSeqs = 1
	arr := []schedule.Arrival{{Seq: 0, At: 0, Phase: "p"}, {Seq: 1, At: 0, Phase: "p"}, {Seq: 2, At: 30 * time.Second, Phase: "q"}}
	out, err := Open(context.Background(), cfg, fixedGen(t, 100, 50), arr, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	first := time.Duration(out.Records[0].DoneNs)
	// p: 0 and first; the p50 is the 1st, the p95 and p99 the 2nd, the
	// largest, reported as its µs.
	firstMs := float64(first/time.Microsecond) / 1e3
	want := map[string]analyze.QueueWait{
		"p": {Available: true, Count: 2, MeanMs: float64(first) / 2 / 1e6, P50Ms: 0, P95Ms: firstMs, P99Ms: firstMs},
		"q": {Available: true, Count: 1},
	}
	if len(out.QueueWaits) != len(want) {
		t.Errorf("queue waits of %d phases, want %d", len(out.QueueWaits), len(want))
	}
	for ph, w := range want {
		if got := out.QueueWaits[ph].QueueWait(); got != w {
			t.Errorf("phase %s: queue wait %+v, want %+v", ph, got, w)
		}
	}

	cfg.Sim.Fault500 = 1 // nothing is admitted
	out, err = Open(context.Background(), cfg, fixedGen(t, 100, 50), arr, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.QueueWaits) != 0 {
		t.Errorf("queue waits %v without an admitted request", out.QueueWaits)
	}
}

// The Stopper is asked what a live run would ask it, on whole seconds from
// CheckFrom to the plan's end; after a stop, arrivals from the stop moment
// on are never sent and the run is the run of the arrivals before it.
func TestOpenStopper(t *testing.T) {
	const planEnd = 20 * time.Second
	arr := constant(t, "p", 4, planEnd)
	cfg := baseConfig()
	gen := chatGen(t, 1)
	full, err := Open(context.Background(), cfg, gen, arr, planEnd, nil)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name      string
		from      time.Duration
		stopAt    int           // stop at this call (1-based); 0 = never
		firstCall time.Duration // the moment of the first question
		calls     int           // questions asked
	}{
		{"from 0: first check at 1 s", 0, 0, time.Second, 19},
		{"from a fraction: the next whole second", 2500 * time.Millisecond, 0, 3 * time.Second, 17},
		{"from a whole second: that second", 3 * time.Second, 0, 3 * time.Second, 17},
		{"from the plan's end: never asked", planEnd, 0, 0, 0},
		{"stop at the first check", 5 * time.Second, 1, 5 * time.Second, 1},
		{"stop at the fourth check", 5 * time.Second, 4, 5 * time.Second, 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := &stopFunc{from: tc.from, stop: func(call int, _ []record.Record, _ time.Duration) string {
				if call == tc.stopAt {
					return "enough"
				}
				return ""
			}}
			out, err := Open(context.Background(), cfg, gen, arr, planEnd, st)
			if err != nil {
				t.Fatal(err)
			}
			if len(st.calls) != tc.calls {
				t.Fatalf("asked %d times, want %d", len(st.calls), tc.calls)
			}
			// What a live run sees at t: the records of every arrival before
			// the horizon, all finished by t; the arrival at the horizon is
			// not (or is not even due yet).
			for k, c := range st.calls {
				at := int64(tc.firstCall) + int64(k)*int64(time.Second)
				n := len(c.recs)
				if n > 0 && !reflect.DeepEqual(c.recs, full.Records[:n]) {
					t.Fatalf("call %d: the records are not the full run's first %d", k+1, n)
				}
				for _, r := range c.recs {
					if r.DoneNs > at {
						t.Fatalf("call %d at %v: seq %d still running (done %v)", k+1, time.Duration(at), r.Seq, time.Duration(r.DoneNs))
					}
				}
				switch {
				case n == len(arr):
					if c.horizon != time.Duration(1<<63-1) {
						t.Errorf("call %d: every arrival complete, horizon %v", k+1, c.horizon)
					}
				case c.horizon != arr[n].At:
					t.Errorf("call %d: horizon %v, want the next arrival's %v", k+1, c.horizon, arr[n].At)
				case full.Records[n].DoneNs <= at && full.Records[n].ScheduledNs <= at:
					t.Errorf("call %d at %v: seq %d had finished, yet lies past the horizon", k+1, time.Duration(at), n)
				}
			}
			if tc.stopAt == 0 {
				if out.StoppedAt != 0 || out.StopWhy != "" || !reflect.DeepEqual(out, full) {
					t.Errorf("not stopped, yet the output differs from the full run (stopped at %v, %q)", out.StoppedAt, out.StopWhy)
				}
				return
			}
			want := tc.firstCall + time.Duration(tc.stopAt-1)*time.Second
			if out.StoppedAt != want || out.StopWhy != "enough" {
				t.Fatalf("stopped at %v (%q), want %v (enough)", out.StoppedAt, out.StopWhy, want)
			}
			n := 0
			for n < len(arr) && arr[n].At < want {
				n++
			}
			if len(out.Records) != n || out.Records[n-1].ScheduledNs >= int64(want) {
				t.Fatalf("%d records, want the %d arrivals before %v", len(out.Records), n, want)
			}
			// The stopped run is the run of the arrivals before the stop.
			short, err := Open(context.Background(), cfg, gen, arr[:n], planEnd, nil)
			if err != nil {
				t.Fatal(err)
			}
			short.StoppedAt, short.StopWhy = want, "enough"
			if !reflect.DeepEqual(out, short) {
				t.Error("the stopped run differs from a run of the arrivals before the stop")
			}
			if reflect.DeepEqual(out.Engine, full.Engine) {
				t.Error("the stopped run kept the full run's engine samples")
			}
		})
	}
}

// The same configuration and seeds give the same output; another seed
// gives another.
func TestOpenDeterministic(t *testing.T) {
	cfg := baseConfig()
	cfg.Sim.Fault500, cfg.Sim.FaultReset, cfg.Sim.FaultStall, cfg.Sim.MaxWaiting = 0.05, 0.05, 0.05, 20
	cfg.Timeout = 5 * time.Second
	plan := schedule.Plan{BaselineRPS: 6, Phases: []schedule.Phase{
		{Name: schedule.PhaseWarmup, Duration: 10 * time.Second, Multiplier: 1},
		{Name: schedule.PhaseBaseline, Duration: 30 * time.Second, Multiplier: 1},
		{Name: schedule.PhaseBurst, Duration: 20 * time.Second, Multiplier: 3},
		{Name: schedule.PhaseRecovery, Duration: 30 * time.Second, Multiplier: 1},
	}}
	run := func(scheduleSeed, genSeed, simSeed int64) *Output {
		t.Helper()
		arr, err := schedule.Build(plan, scheduleSeed)
		if err != nil {
			t.Fatal(err)
		}
		c := cfg
		c.Sim.Seed = simSeed
		out, err := Open(context.Background(), c, chatGen(t, genSeed), arr, plan.Duration(), nil)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	a, b := run(1, 1, 1), run(1, 1, 1)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two runs with the same seeds differ")
	}
	for name, o := range map[string]*Output{"schedule seed": run(2, 1, 1), "workload seed": run(1, 2, 1), "engine seed": run(1, 1, 2)} {
		if reflect.DeepEqual(a.Records, o.Records) {
			t.Errorf("another %s gave the same records", name)
		}
	}
}

// sample reports every metric the engine model knows, from the snapshot.
func TestSample(t *testing.T) {
	s := sim.Snapshot{Waiting: 3, Running: 7, KVUsage: 0.25, ReadyReplicas: 2, StartingReplicas: 1, PromptTokens: 1000, GenerationTokens: 500, Finished: 9}
	x := sample(1500*time.Millisecond, s)
	want := map[scrape.Metric]float64{scrape.Waiting: 3, scrape.Running: 7, scrape.KVUsage: 0.25, scrape.Replicas: 2, scrape.PromptTokens: 1000, scrape.GenerationTokens: 500, scrape.Success: 9}
	if x.TNs != int64(1500*time.Millisecond) {
		t.Errorf("at %d ns", x.TNs)
	}
	for m, v := range want {
		if got, ok := x.Value(m); !ok || got != v {
			t.Errorf("%v: %v (%v), want %v", m, got, ok, v)
		}
	}
	if _, ok := x.Value(scrape.QueueTime); ok {
		t.Error("queue time reported: the model has no histogram")
	}
}
