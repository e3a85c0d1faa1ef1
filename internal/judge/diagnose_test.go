package judge

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/golden"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/report"
)

// diagPhases: baseline 0–30 s, burst 30–40 s, recovery 40–70 s.
func diagPhases() []analyze.Phase {
	return []analyze.Phase{
		{Name: "baseline", Start: 0, End: 30 * s, Rate: 10},
		{Name: "burst", Start: 30 * s, End: 40 * s, Rate: 30},
		{Name: "recovery", Start: 40 * s, End: 70 * s, Rate: 10},
	}
}

// arrivals makes one record per arrival of phase [from, to) at rate/s:
// f gets the arrival's index in the phase and its scheduled time.
func arrivals(phase string, from, to time.Duration, rate float64, f func(k int, t time.Duration) *record.Record) []record.Record {
	var out []record.Record
	gap := time.Duration(float64(time.Second) / rate)
	for k, t := 0, from; t < to; k, t = k+1, t+gap {
		if r := f(k, t); r != nil {
			r.Phase = phase
			out = append(out, *r)
		}
	}
	return out
}

// normal is a request of a healthy target: TTFT 80–120 ms, 11 tokens at
// 100 ms per token.
func normal(k int, t time.Duration) *record.Record {
	ttft := 80*ms + time.Duration(k%5)*10*ms
	return okRec(t, 0, ttft, ttft+time.Second)
}

// calm is a baseline and a recovery of normal requests, around a burst
// made by burst.
func calm(burst func(k int, t time.Duration) *record.Record, burstRate float64) []record.Record {
	recs := arrivals("baseline", 0, 30*s, 10, normal)
	recs = append(recs, arrivals("burst", 30*s, 40*s, burstRate, burst)...)
	return append(recs, arrivals("recovery", 40*s, 70*s, 10, normal)...)
}

func analyseDiag(t *testing.T, phases []analyze.Phase, recs []record.Record) *analyze.Result {
	t.Helper()
	r, err := analyze.Records(analyze.Config{Phases: phases, Timeout: time.Minute}, recs, 0)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// queuedEngine is an engine whose waiting queue grew in the burst.
var queuedEngine = map[string]EngineQueue{
	"baseline": {Scrapes: 30, WaitingMax: 1, WaitingMean: 0.1, RunningMax: 4},
	"burst":    {Scrapes: 10, WaitingMax: 180, WaitingMean: 90, RunningMax: 16},
	"recovery": {Scrapes: 30, WaitingMax: 120, WaitingMean: 20, RunningMax: 16},
}

// emptyEngine is an engine whose waiting queue stayed empty throughout.
var emptyEngine = map[string]EngineQueue{
	"baseline": {Scrapes: 30, WaitingMax: 0, RunningMax: 2},
	"burst":    {Scrapes: 10, WaitingMax: 0, RunningMax: 6},
	"recovery": {Scrapes: 30, WaitingMax: 0, RunningMax: 2},
}

// backlogBurst is a burst at 30/s into a queue: arrival k waits 60 ms × k
// more before its first token (up to 18 s), decoding at the same speed;
// the last 50 time out.
func backlogBurst(k int, t time.Duration) *record.Record {
	if k >= 250 {
		return failRec(t, record.Timeout)
	}
	ttft := 100*ms + time.Duration(k)*60*ms
	return okRec(t, 0, ttft, ttft+time.Second)
}

type diagScenario struct {
	name      string
	phases    []analyze.Phase // nil: diagPhases
	recs      []record.Record
	engine    map[string]EngineQueue
	generator func(recs []record.Record) analyze.Generator
	mode      string
	hints     []string // hypotheses (prefixes) that must be there, in order
	capacity  DiagCapacity
	scaling   []ScaleEvent
	absent    []string // hypotheses (prefixes) that must not be there
	summary   []string // parts the summary must hold
}

// longAnswers is a burst of normal first tokens where one answer in
// twenty runs 15 s, past the 12 s completion deadline.
func longAnswers(k int, t time.Duration) *record.Record {
	if k%20 == 0 {
		return okRec(t, 0, 100*ms, 15*s)
	}
	return normal(k, t)
}

func diagScenarios() []diagScenario {
	return []diagScenario{
		{
			name: "held", recs: calm(normal, 20), mode: ModeHeld,
		},
		{
			// One burst answer in five ends ok at once with no token (a
			// model that emits end-of-sequence first): not good, but not
			// late either — no backlog, and the summary counts them.
			name: "empty-answers",
			recs: calm(func(k int, t time.Duration) *record.Record {
				r := normal(k, t)
				if k%5 == 0 {
					r.FirstChunkNs, r.FirstTokenNs, r.Chunks, r.OutputTokens, r.TPOTNs, r.ITLMaxNs = record.None, record.None, 0, 1, record.None, record.None
					r.Good = analyze.Judge(r, analyze.DefaultDeadlines)
				}
				return r
			}, 20),
			mode:    ModeMissed,
			summary: []string{"40 of 200 ok answers carried no token (empty answers are never good)"},
		},
		{
			// Two of three burst arrivals are refused at once with
			// Retry-After; the rest are served as usual.
			name: "rejecting",
			recs: calm(func(k int, t time.Duration) *record.Record {
				if k%3 != 0 {
					r := failRec(t, record.RateLimited)
					r.RetryAfterNs = int64(time.Second)
					return r
				}
				return normal(k, t)
			}, 30),
			engine: emptyEngine,
			mode:   ModeRejectedFast,
			hints:  []string{"the target sheds load with an admission limit"},
		},
		{
			// 503s after a long wait are not a fast rejection: the target
			// queued them first.
			name: "slow-503",
			recs: calm(func(k int, t time.Duration) *record.Record {
				if k%3 != 0 {
					r := failRec(t, record.HTTPError)
					r.Status = 503
					r.DoneNs = r.SentNs + int64(8*s)
					return r
				}
				return normal(k, t)
			}, 30),
			mode: ModeBacklogged,
		},
		{
			name: "backlogging", recs: calm(backlogBurst, 30), engine: queuedEngine, mode: ModeBacklogged,
			hints: []string{"requests queued in the engine before their first token", "throughput saturated", "the target kept working on requests the client had given up on"},
		},
		{
			// A baseline of 15 requests is too few to compare quantiles
			// with, but a burst TTFT far over its deadline still says
			// "backlogged" with that evidence (seen on Ollama at 1 req/s).
			name: "backlogging-short-baseline",
			recs: func() []record.Record {
				recs := arrivals("baseline", 0, 30*s, 0.5, normal)
				recs = append(recs, arrivals("burst", 30*s, 40*s, 30, backlogBurst)...)
				return append(recs, arrivals("recovery", 40*s, 70*s, 10, normal)...)
			}(),
			mode:    ModeBacklogged,
			summary: []string{"over the 2s deadline (baseline had only 15 requests to compare with)"},
		},
		{
			// The same run without engine metrics: the hint can only say
			// "waiting or prefill", and to check the engine's queue.
			name: "backlogging-no-engine", recs: calm(backlogBurst, 30), mode: ModeBacklogged,
			hints: []string{"requests waited before their first token: queueing or prefill pressure"},
		},
		{
			// Every arrival is retried after 429s: 3 attempts per arrival.
			name: "retry-storm",
			recs: calm(func(k int, t time.Duration) *record.Record {
				if k%2 == 0 {
					r := failRec(t, record.RateLimited)
					r.Attempts = 4
					return r
				}
				r := normal(k, t)
				r.Attempts = 2
				return r
			}, 30),
			mode:  ModeRetriesAmplified,
			hints: []string{"retries added load"},
		},
		{
			// The generator fell behind: each burst arrival is sent 5 ms
			// later than the one before (up to 1.5 s late), and the target
			// looks backlogged from the schedule's point of view.
			name: "generator-behind",
			recs: calm(func(k int, t time.Duration) *record.Record {
				lag := time.Duration(k) * 5 * ms
				return okRec(t, lag, lag+100*ms, lag+1100*ms)
			}, 30),
			generator: burstGenerator,
			mode:      ModeGeneratorLimited,
			hints:     []string{"the machine running surge could not keep the schedule"},
		},
		{
			// The same lag without a generator verdict (virtual time or
			// too few sends for it): the schedule lag alone decides.
			name: "lagging-no-verdict",
			recs: calm(func(k int, t time.Duration) *record.Record {
				lag := time.Duration(k) * 5 * ms
				return okRec(t, lag, lag+100*ms, lag+1100*ms)
			}, 30),
			mode: ModeGeneratorLimited,
		},
		{
			// Six late sends of 301 (150 ms): the generator check fails the
			// burst on its lag p99, but the target was tested — it held.
			name: "lag-spikes",
			recs: calm(func(k int, t time.Duration) *record.Record {
				lag := time.Duration(0)
				if k%50 == 7 {
					lag = 150 * ms
				}
				return okRec(t, lag, lag+100*ms, lag+1100*ms)
			}, 30),
			generator: burstGenerator,
			mode:      ModeHeld,
		},
		{
			// TTFT from send rises 20× and TPOT 6×: the batch filled and
			// a queue formed — saturation, not waiting alone.
			name: "saturated",
			recs: calm(func(k int, t time.Duration) *record.Record {
				if k < 100 {
					return normal(k, t)
				}
				return okRec(t, 0, 2400*ms+time.Duration(k%5)*10*ms, 2400*ms+6*time.Second)
			}, 30),
			engine: queuedEngine,
			mode:   ModeBacklogged,
			hints:  []string{"saturation: requests waited before their first token and a fuller batch"},
		},
		{
			// A fifth of the burst never left: the in-flight cap was full.
			name: "drops",
			recs: calm(func(k int, t time.Duration) *record.Record {
				if k%5 == 0 {
					return failRec(t, record.GeneratorDrop)
				}
				return normal(k, t)
			}, 30),
			mode:  ModeGeneratorLimited,
			hints: []string{"the in-flight cap filled"},
		},
		{
			// The same fifth never sent because a worker of the fleet was
			// lost: not the in-flight cap, and no advice to raise it.
			name: "drops-worker-lost",
			recs: calm(func(k int, t time.Duration) *record.Record {
				if k%5 == 0 {
					r := failRec(t, record.GeneratorDrop)
					r.Error, r.Cause = "worker w1 lost at 8.0 s: connection dropped (never sent)", record.CauseWorkerLost
					return r
				}
				return normal(k, t)
			}, 30),
			mode:   ModeGeneratorLimited,
			hints:  []string{"a worker of the fleet stopped"},
			absent: []string{"the in-flight cap filled"},
		},
		{
			// TTFT from send grows to 6 s while the engine's queue stays
			// empty: the wait is in front of the engine.
			name: "queue-outside-engine",
			recs: calm(func(k int, t time.Duration) *record.Record {
				ttft := 100*ms + time.Duration(k)*20*ms
				return okRec(t, 0, ttft, ttft+time.Second)
			}, 30),
			engine: emptyEngine,
			mode:   ModeBacklogged,
			hints:  []string{"requests waited outside the engine"},
		},
		{
			// The same empty gauge, but the engine's queue-time histogram
			// holds the rise (as on vLLM: p99 432 ms for a 250 ms rise):
			// the wait was inside the engine, between two scrapes.
			name: "queue-inside-between-scrapes",
			recs: calm(func(k int, t time.Duration) *record.Record {
				ttft := 100*ms + time.Duration(k)*20*ms
				return okRec(t, 0, ttft, ttft+time.Second)
			}, 30),
			engine: map[string]EngineQueue{
				"baseline": emptyEngine["baseline"],
				"burst":    {Scrapes: 10, WaitingMax: 1, RunningMax: 6, Wait: analyze.QueueWait{Available: true, Count: 300, MeanMs: 2500, P50Ms: 2500, P95Ms: 5500, P99Ms: 5800}},
				"recovery": emptyEngine["recovery"],
			},
			mode:   ModeBacklogged,
			absent: []string{"requests waited outside the engine"},
		},
		{
			// A TTFT rise of 300 ms with a gauge scraped once a second
			// proves nothing about where the wait was.
			name: "short-wait-under-scrape-interval",
			recs: calm(func(k int, t time.Duration) *record.Record {
				ttft := 100*ms + time.Duration(k%10)*40*ms
				return okRec(t, 0, ttft, ttft+time.Second)
			}, 30),
			engine: emptyEngine,
			mode:   ModeHeld,
			absent: []string{"requests waited outside the engine"},
		},
		{
			// TTFT steady, each token three times slower: decode contention.
			name: "decode-contention",
			recs: calm(func(k int, t time.Duration) *record.Record {
				ttft := 80*ms + time.Duration(k%5)*10*ms
				return okRec(t, 0, ttft, ttft+3*time.Second)
			}, 15),
			engine: queuedEngine,
			mode:   ModeHeld,
			hints:  []string{"decode contention"},
		},
		{
			// TTFT and TPOT steady, answers twice as long as asked: the
			// server ignored max_tokens — a protocol violation, said as
			// the cause.
			name: "longer-outputs",
			recs: calm(func(k int, t time.Duration) *record.Record {
				ttft := 80*ms + time.Duration(k%5)*10*ms
				r := okRec(t, 0, ttft, ttft+3*time.Second)
				r.OutputTokens, r.Chunks, r.MaxTokens = 31, 31, 16
				r.TPOTNs = (r.DoneNs - r.FirstTokenNs) / 30
				return r
			}, 15),
			mode:    ModeProtocol,
			hints:   []string{"the target breaks the protocol"},
			summary: []string{"151 of 151 successful answers in the burst ran past their max_tokens"},
		},
		{
			name: "failing",
			recs: calm(func(k int, t time.Duration) *record.Record {
				if k%4 == 0 {
					return failRec(t, record.HTTPError)
				}
				return normal(k, t)
			}, 30),
			mode:   ModeFailing,
			hints:  []string{"the target, or something in front of it, breaks"},
			absent: []string{"the target refused these requests as invalid"},
		},
		{
			// The failures are 400s (prompts over the model's context, as
			// vLLM answers them): a workload problem, the cause, and no
			// load hypothesis.
			name: "failing-client-errors",
			recs: calm(func(k int, t time.Duration) *record.Record {
				if k%4 == 0 {
					r := failRec(t, record.HTTPError)
					r.Status = 400
					return r
				}
				return normal(k, t)
			}, 30),
			mode:   ModeBadRequest,
			hints:  []string{"the target refuses these requests as invalid"},
			absent: []string{"the target, or something in front of it, breaks"},
		},
		{
			// Half 400s, half 500s: the cause first, then the load
			// hypothesis for the server errors.
			name: "failing-mixed",
			recs: calm(func(k int, t time.Duration) *record.Record {
				switch k % 8 {
				case 0:
					r := failRec(t, record.HTTPError)
					r.Status = 400
					return r
				case 4:
					return failRec(t, record.HTTPError)
				}
				return normal(k, t)
			}, 30),
			mode:  ModeBadRequest,
			hints: []string{"the target refuses these requests as invalid", "the target, or something in front of it, breaks"},
		},
		{
			// A plain run (no burst phase) whose TTFT grows in its second
			// half: judged on the run, compared between its first and
			// last windows.
			name:   "run-no-burst",
			phases: []analyze.Phase{{Name: "main", Start: 0, End: 60 * s, Rate: 10}},
			recs: arrivals("main", 0, 60*s, 10, func(k int, t time.Duration) *record.Record {
				ttft := 100 * ms
				if t > 30*s {
					ttft += (t - 30*s) / 4
				}
				return okRec(t, 0, ttft, ttft+time.Second)
			}),
			mode:  ModeBacklogged,
			hints: []string{"requests waited before their first token"},
		},
		{
			name:   "run-held",
			phases: []analyze.Phase{{Name: "main", Start: 0, End: 60 * s, Rate: 10}},
			recs:   arrivals("main", 0, 60*s, 10, normal),
			mode:   ModeHeld,
		},
		{
			// The backlog drained faster than the fluid model predicts
			// while a sixth of the burst timed out: the timed-out requests
			// left (the stale-work hint would contradict the recovery).
			// μ near the measured drain rate: the target's own limit.
			name: "drained-faster", recs: calm(backlogBurst, 30), engine: queuedEngine, mode: ModeBacklogged,
			capacity: DiagCapacity{Mu: 8.2, Source: "the simulator", PredictedRecoveryMs: 45000},
			hints:    []string{"requests queued in the engine", "throughput saturated near 7.97 req/s, at the capacity μ 8.2 req/s", "timeouts shortened the recovery"},
			absent:   []string{"the target kept working on requests the client had given up on"},
		},
		{
			// The drain rate far below the known μ, with timeouts.
			name: "plateau-below-mu", recs: calm(backlogBurst, 30), engine: queuedEngine, mode: ModeBacklogged,
			capacity: DiagCapacity{Mu: 20, Source: "--capacity-rps", PredictedRecoveryMs: math.NaN()},
			hints:    []string{"requests queued in the engine", "throughput saturated near 7.97 req/s, 39.84% of the capacity μ 20 req/s: timed-out requests", "the target kept working"},
		},
		{
			// The autoscaler added a replica 10 s after the burst: capacity
			// changed, the fixed-μ prediction does not hold.
			name: "autoscaled", recs: calm(backlogBurst, 30), engine: queuedEngine, mode: ModeBacklogged,
			capacity: DiagCapacity{Mu: 8.2, Source: "the simulator", PredictedRecoveryMs: 45000},
			scaling:  []ScaleEvent{{AtMs: 20000, Kind: "scale_trigger", Replica: 1}, {AtMs: 50000, Kind: "first_served", Replica: 1}},
			hints:    []string{"capacity grew during the run (the autoscaler added replicas); the fluid prediction assumed a fixed μ"},
			summary:  []string{"capacity changed during the run: the autoscaler added a replica (replica 1 first served 10s after the burst's end)"},
		},
		{
			// No queue, no rejections, but one answer in twenty ran past
			// the completion deadline: held, and the SLO missed anyway.
			name: "held-slo-missed", recs: calm(longAnswers, 20), mode: ModeMissed,
			summary: []string{"no queueing or rejections, but the SLO missed: p99 completion 15s (limit 12s)", "long answers missed the 12s completion deadline"},
		},
		{
			// A run of named phases (no burst phase): its first phase
			// against its worst, and the phase after it.
			name: "run-phases",
			phases: []analyze.Phase{
				{Name: "base", Start: 0, End: 30 * s, Rate: 10},
				{Name: "spike", Start: 30 * s, End: 40 * s, Rate: 30},
				{Name: "after", Start: 40 * s, End: 70 * s, Rate: 10},
			},
			recs: append(append(arrivals("base", 0, 30*s, 10, normal), arrivals("spike", 30*s, 40*s, 30, backlogBurst)...),
				arrivals("after", 40*s, 70*s, 10, func(k int, t time.Duration) *record.Record {
					ttft := 100*ms + time.Duration(max(0, 150-k))*100*ms
					return okRec(t, 0, ttft, ttft+time.Second)
				})...),
			engine:  map[string]EngineQueue{"base": queuedEngine["baseline"], "spike": queuedEngine["burst"], "after": queuedEngine["recovery"], "overall": queuedEngine["burst"]},
			mode:    ModeBacklogged,
			hints:   []string{"requests queued in the engine before their first token"},
			summary: []string{"TTFT p95 from schedule 120ms → > 60s (≥ 500×, base → spike)", "it persisted into phase after"},
		},
		{
			// The burst phase exists but nothing arrived in it.
			name: "zero-offered",
			recs: append(arrivals("baseline", 0, 30*s, 10, normal), arrivals("recovery", 40*s, 70*s, 10, normal)...),
			mode: ModeNotJudged,
		},
	}
}

// burstGenerator is analyze.GeneratorCheck over the burst's sends, as the
// experiment computes it.
func burstGenerator(recs []record.Record) analyze.Generator {
	var sched, sent []int64
	for _, r := range recs {
		if r.Phase == "burst" && r.SentNs != record.None {
			sched, sent = append(sched, r.ScheduledNs), append(sent, r.SentNs)
		}
	}
	p, _ := analyseDiagQuiet(recs).Phase("burst")
	return analyze.GeneratorCheck(sched, sent, p.Latency.ScheduleLag.P99Ms)
}

func analyseDiagQuiet(recs []record.Record) *analyze.Result {
	r, _ := analyze.Records(analyze.Config{Phases: diagPhases(), Timeout: time.Minute}, recs, 0)
	return r
}

// TestDiagnose judges constructed runs, one per failure mode and hint,
// and compares the rendered diagnosis with testdata/diagnose/<case>.golden.
func TestDiagnose(t *testing.T) {
	for _, tc := range diagScenarios() {
		t.Run(tc.name, func(t *testing.T) {
			phases := tc.phases
			if phases == nil {
				phases = diagPhases()
			}
			res := analyseDiag(t, phases, tc.recs)
			in := DiagnosisInput{Scope: "5×", Result: res, Verdicts: sloOf(res), Records: srcOf(tc.recs), Engine: tc.engine, Capacity: tc.capacity, Scaling: tc.scaling}
			if tc.generator != nil {
				in.Generator = tc.generator(tc.recs)
			}
			d := Diagnose(in)
			if tc.name == "lag-spikes" && !in.Generator.Behind {
				t.Fatalf("the case needs a generator check that fails on lag p99: %+v", in.Generator)
			}
			if d.Mode != tc.mode {
				t.Errorf("mode %q, want %q (summary: %s)", d.Mode, tc.mode, d.Summary)
			}
			i := 0
			for _, h := range d.Hints {
				if i < len(tc.hints) && strings.HasPrefix(h.Hypothesis, tc.hints[i]) {
					i++
				}
				if h.Hypothesis == "" || h.Evidence == "" || h.Check == "" {
					t.Errorf("hint with an empty part: %+v", h)
				}
			}
			for _, h := range d.Hints {
				for _, a := range tc.absent {
					if strings.HasPrefix(h.Hypothesis, a) {
						t.Errorf("hint %q must not be there:\n%s", a, diagText(d))
					}
				}
			}
			for _, part := range tc.summary {
				if !strings.Contains(d.Summary, part) {
					t.Errorf("summary lacks %q: %s", part, d.Summary)
				}
			}
			if i < len(tc.hints) {
				t.Errorf("missing hint %q (in order %q); got:\n%s", tc.hints[i], tc.hints, diagText(d))
			}
			golden.Check(t, "diagnose/"+tc.name+".golden", []byte(diagText(d)))
		})
	}
}

// TestDiagnoseGeneratorWins: a generator that fell behind wins over every
// target mode — here a target that also rejected most of the burst.
func TestDiagnoseGeneratorWins(t *testing.T) {
	recs := calm(func(k int, t time.Duration) *record.Record {
		if k%5 == 0 {
			return failRec(t, record.GeneratorDrop)
		}
		return failRec(t, record.RateLimited)
	}, 30)
	res := analyseDiag(t, diagPhases(), recs)
	d := Diagnose(DiagnosisInput{Scope: "5×", Result: res, Verdicts: sloOf(res), Records: srcOf(recs)})
	if d.Mode != ModeGeneratorLimited {
		t.Fatalf("mode %q, want %q: %s", d.Mode, ModeGeneratorLimited, d.Summary)
	}
	for _, h := range d.Hints {
		if strings.Contains(h.Hypothesis, "admission") || strings.Contains(h.Hypothesis, "rate limit") {
			t.Errorf("a target hint on an untested target: %+v", h)
		}
	}
}

// TestDiagnoseRejectionsWithoutRecords: without records a 429 share still
// says "rejected fast" (their speed unknown), and 503s are not counted.
func TestDiagnoseRejectionsWithoutRecords(t *testing.T) {
	recs := calm(func(k int, t time.Duration) *record.Record {
		if k%2 == 0 {
			return failRec(t, record.RateLimited)
		}
		return normal(k, t)
	}, 30)
	res := analyseDiag(t, diagPhases(), recs)
	d := Diagnose(DiagnosisInput{Scope: "5×", Result: res, Verdicts: sloOf(res)})
	if d.Mode != ModeRejectedFast || strings.Contains(d.Summary, "median response") {
		t.Fatalf("got %q: %s", d.Mode, d.Summary)
	}
}

// TestDiagnoseNil: no analysis is "not judged", never a panic.
func TestDiagnoseNil(t *testing.T) {
	if d := Diagnose(DiagnosisInput{Scope: "run"}); d.Mode != ModeNotJudged {
		t.Fatalf("mode %q", d.Mode)
	}
}

// TestDiagnoseThresholdEdges pins the thresholds the modes turn on.
func TestDiagnoseThresholdEdges(t *testing.T) {
	share := func(every int, o record.Outcome) []record.Record {
		return calm(func(k int, t time.Duration) *record.Record {
			if k%every == 0 {
				return failRec(t, o)
			}
			return normal(k, t)
		}, 30)
	}
	for _, tc := range []struct {
		name string
		recs []record.Record
		want string
	}{
		{"429 at 1 in 25 (4%) is below DiagRejectShare", share(25, record.RateLimited), ModeMissed},
		{"429 at 1 in 20 (5%) reaches it", share(20, record.RateLimited), ModeRejectedFast},
		{"errors at 1 in 25 are below DiagErrorShare", share(25, record.HTTPError), ModeMissed},
		{"timeouts at 1 in 50 (2%) exceed DiagBacklogTimeoutShare", share(50, record.Timeout), ModeBacklogged},
		{"drops at 1 in 150 (0.67%) are below DiagDropShare", share(150, record.GeneratorDrop), ModeHeld},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := analyseDiag(t, diagPhases(), tc.recs)
			d := Diagnose(DiagnosisInput{Scope: "k", Result: res, Verdicts: sloOf(res), Records: srcOf(tc.recs)})
			if d.Mode != tc.want {
				t.Errorf("mode %q, want %q: %s", d.Mode, tc.want, d.Summary)
			}
		})
	}
}

func TestMoveText(t *testing.T) {
	a := analyze.Dist{Count: 100, P95Ms: 343}
	b := analyze.Dist{Count: 10, P95Ms: 60000, P95Censored: true, CensorMs: 60000}
	if got, want := move(a, b, analyze.Q95, "baseline → burst"), "343ms → > 60s (≥ 175×, baseline → burst)"; got != want {
		t.Errorf("move = %q, want %q", got, want)
	}
	if _, ok := factor(analyze.Dist{Count: 5, P95Ms: 10}, b, analyze.Q95); ok {
		t.Error("a reference of 5 values was compared")
	}
	if !math.IsNaN(scanRecords(nil, -1).Rejections(nil, 10).MedianMs) {
		t.Error("median of no rejections should be unknown")
	}
}

// diagText renders d as results.md and the terminal word it, through the
// report package's rendering.
func diagText(d Diagnosis) string {
	r := report.Diagnosis{Scope: d.Scope, Mode: d.Mode, Summary: d.Summary}
	for _, h := range d.Hints {
		r.Hints = append(r.Hints, report.Hint{Hypothesis: h.Hypothesis, Evidence: h.Evidence, Check: h.Check})
	}
	return r.Text()
}

// Must show (issue 25): each failure is diagnosed by its cause before any
// hypothesis about load. One run per cause, its burst made of it (the
// others of normal requests, or of it too for a target that never
// worked); causes.golden holds each one's diagnosis.
func TestCauseTable(t *testing.T) {
	fail := func(o record.Outcome, status int, errText string, at time.Duration) *record.Record {
		r := failRec(at, o)
		r.Status, r.Error = status, errText
		return r
	}
	everywhere := func(f func(k int, t time.Duration) *record.Record) []record.Record {
		recs := arrivals("baseline", 0, 30*s, 10, f)
		recs = append(recs, arrivals("burst", 30*s, 40*s, 30, f)...)
		return append(recs, arrivals("recovery", 40*s, 70*s, 10, f)...)
	}
	cases := []struct {
		name   string
		recs   []record.Record
		mode   string
		absent string // a load hypothesis that must not be offered
	}{
		{"dead port", everywhere(func(_ int, t time.Duration) *record.Record {
			return fail(record.ConnError, 0, "connection refused", t)
		}), ModeUnreachable, "requests queued"},
		{"silent port", everywhere(func(_ int, t time.Duration) *record.Record {
			return fail(record.Timeout, 0, "timeout before headers", t)
		}), ModeNoResponse, "requests queued"},
		{"HTML answer", everywhere(func(_ int, t time.Duration) *record.Record {
			r := fail(record.InvalidResponse, 200, "not SSE (text/html)", t)
			r.HeadersNs = int64(t + 5*ms)
			return r
		}), ModeNotInference, "the target, or something in front of it, breaks"},
		{"endless stream", everywhere(func(_ int, t time.Duration) *record.Record {
			r := fail(record.Timeout, 200, "timeout after first token", t)
			r.HeadersNs, r.FirstTokenNs, r.FirstChunkNs = int64(t+5*ms), int64(t+40*ms), int64(t+40*ms)
			r.Chunks, r.OutputTokens, r.MaxTokens = 5000, 5000, 105
			return r
		}), ModeProtocol, "stale work"},
		{"max_tokens ignored", calm(func(k int, t time.Duration) *record.Record {
			r := normal(k, t)
			r.OutputTokens, r.MaxTokens = 7106, 105
			return r
		}, 20), ModeProtocol, "longer outputs"},
		{"503s", calm(func(k int, t time.Duration) *record.Record {
			if k%3 == 0 {
				return fail(record.HTTPError, 503, "status 503", t)
			}
			return normal(k, t)
		}, 30), ModeRejectedFast, ""},
		{"429 with rate-limit headers", calm(func(k int, t time.Duration) *record.Record {
			if k%3 == 0 {
				r := fail(record.RateLimited, 429, "status 429", t)
				r.RateLimit = record.NoRateLimit
				r.RateLimit.RemainingTokens, r.RateLimit.ResetTokensNs = 0, int64(12*s)
				return r
			}
			return normal(k, t)
		}, 30), ModeQuota, "the target sheds load"},
		// A managed endpoint sends its headers on every answer: a 429
		// whose buckets all had room came from a full queue, not a quota.
		{"429 with rate-limit headers showing room", calm(func(k int, t time.Duration) *record.Record {
			if k%3 == 0 {
				r := fail(record.RateLimited, 429, "status 429", t)
				r.RateLimit = record.NoRateLimit
				r.RateLimit.LimitTokens, r.RateLimit.RemainingTokens, r.RateLimit.ResetTokensNs = 100000, 80000, 0
				return r
			}
			return normal(k, t)
		}, 30), ModeRejectedFast, "quota"},
		{"overload", calm(backlogBurst, 30), ModeBacklogged, ""},
	}
	var out strings.Builder
	for _, tc := range cases {
		res := analyseDiag(t, diagPhases(), tc.recs)
		d := Diagnose(DiagnosisInput{Scope: "5×", Result: res, Verdicts: sloOf(res), Records: srcOf(tc.recs)})
		if d.Mode != tc.mode {
			t.Errorf("%s: mode %q, want %q: %s", tc.name, d.Mode, tc.mode, d.Summary)
		}
		for _, h := range d.Hints {
			if tc.absent != "" && strings.Contains(h.Hypothesis, tc.absent) {
				t.Errorf("%s: a load hypothesis for a cause no load explains: %s", tc.name, h.Hypothesis)
			}
		}
		fmt.Fprintf(&out, "# %s\n%s\n", tc.name, diagText(d))
	}
	golden.Check(t, "diagnose/causes.golden", []byte(out.String()))
}
