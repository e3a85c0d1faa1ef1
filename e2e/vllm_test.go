package e2e

import (
	"bufio"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/judge"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/rundir"
	"github.com/surge-bench/surge/internal/scrape"
)

// The workload of every vLLM test: fixed lengths and ignore_eos, so that
// each request generates exactly vllmOutputTokens (random weights would
// otherwise stop at a chance end-of-sequence token).
const (
	vllmPromptTokens = 64
	vllmOutputTokens = 32
)

func vllmEngine(t *testing.T) (base, model, metrics string) {
	t.Helper()
	base, model, metrics = os.Getenv("VLLM_BASE_URL"), os.Getenv("VLLM_MODEL"), os.Getenv("VLLM_METRICS_URL")
	if base == "" || model == "" || metrics == "" {
		t.Skip("no vLLM: run through scripts/vllm-e2e.sh")
	}
	return base, model, metrics
}

// vsurge runs the binary against vLLM with the fixed workload and its
// engine metrics (preset vllm).
func vsurge(t *testing.T, args ...string) (string, int) {
	t.Helper()
	base, model, metrics := vllmEngine(t)
	// The defaults go right after the subcommand, so a test's own flags win.
	all := append([]string{args[0], "--target", base, "--model", model, "--api", "completions",
		"--prompt-tokens", strconv.Itoa(vllmPromptTokens), "--output-tokens", strconv.Itoa(vllmOutputTokens), "--ignore-eos",
		"--metrics-url", metrics, "--metrics-preset", "vllm", "-q"}, args[1:]...)
	t0 := time.Now()
	out, err := exec.Command(surgeBin, all...).CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	t.Logf("surge %s → exit %d in %.0fs\n%s", strings.Join(args, " "), code, time.Since(t0).Seconds(), out)
	return string(out), code
}

// otlpListen is the address vLLM sends its llm_request spans to (the
// script's VLLM_OTLP_LISTEN), for surge's --otlp-listen.
func otlpListen(t *testing.T) string {
	t.Helper()
	a := os.Getenv("VLLM_OTLP_LISTEN")
	if a == "" {
		t.Fatal("VLLM_OTLP_LISTEN is empty: scripts/vllm-e2e.sh starts vLLM with tracing unless SURGE_VLLM_OTLP=off")
	}
	return a
}

// spanAgreement checks the join of vLLM's spans to the records of a run:
// every successful request got its span, and surge's completion from send
// agrees with vLLM's own gen_ai.latency.e2e for the same request (the
// difference is HTTP, tokenization and detokenization around the engine,
// and can only be positive up to clock noise). It returns the p50 and p95
// of surge − vLLM and of engine queue wait, in ms.
func spanAgreement(t *testing.T, what string, recs []record.Record, sum rundir.Summary) (diff50, diff95, maxDiff float64) {
	t.Helper()
	if sum.EngineSpans == nil {
		t.Fatalf("%s: summary.json has no engine_spans (was --otlp-listen given?)", what)
	}
	j := sum.EngineSpans.Join
	ok := okCount(recs)
	var diffs []float64
	for _, r := range recs {
		if r.Outcome != record.OK || r.EngineE2ENs == record.None {
			continue
		}
		d := float64(r.E2ESend()-r.EngineE2ENs) / 1e6
		diffs = append(diffs, d)
		if d < -1 {
			t.Errorf("%s seq %d: vLLM's e2e %.2f ms is longer than surge's completion from send %.2f ms", what, r.Seq, float64(r.EngineE2ENs)/1e6, float64(r.E2ESend())/1e6)
		}
	}
	if len(diffs) == 0 {
		t.Fatalf("%s: no record got a span (%+v)", what, *sum.EngineSpans)
	}
	sort.Float64s(diffs)
	q := func(p float64) float64 { return diffs[int(math.Ceil(p*float64(len(diffs))))-1] }
	diff50, diff95, maxDiff = q(0.5), q(0.95), diffs[len(diffs)-1]
	t.Logf("%s spans: %d of %d ok requests joined, %d missing, %d unmatched; surge completion − vLLM e2e per request: p50 %.2f ms, p95 %.2f ms, max %.2f ms",
		what, j.Joined, ok, j.Missing, j.Unmatched, diff50, diff95, maxDiff)
	if int(j.Joined) != ok || len(diffs) != ok {
		t.Errorf("%s: %d of %d successful requests got a span (%d with e2e)", what, j.Joined, ok, len(diffs))
	}
	return diff50, diff95, maxDiff
}

// vllmSeries reads vLLM's /metrics and returns the sum over label sets of
// each series named (a name may carry one label matcher, as in
// `vllm:request_success_total{finished_reason="abort"`).
func vllmSeries(t *testing.T, names ...string) []float64 {
	t.Helper()
	_, _, metrics := vllmEngine(t)
	resp, err := http.Get(metrics)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := make([]float64, len(names))
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		for i, name := range names {
			base, matcher, _ := strings.Cut(name, "{")
			if !strings.HasPrefix(line, base+"{") && !strings.HasPrefix(line, base+" ") {
				continue
			}
			if matcher != "" && !strings.Contains(line, matcher) {
				continue
			}
			f := strings.Fields(line)
			v, err := strconv.ParseFloat(f[len(f)-1], 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			out[i] += v
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// vllmCounters reads vLLM's cumulative token counters from /metrics,
// summed over label sets.
func vllmCounters(t *testing.T) (prompt, generation float64) {
	t.Helper()
	v := vllmSeries(t, "vllm:prompt_tokens_total", "vllm:generation_tokens_total")
	return v[0], v[1]
}

// checkVLLMRecords: every scheduled arrival has one record; the ok ones
// carry vLLM's own usage with exactly the tokens asked for. It returns the
// sums of prompt and output tokens over all records.
func checkVLLMRecords(t *testing.T, recs []record.Record) (prompt, output int) {
	t.Helper()
	if len(recs) == 0 {
		t.Fatal("no records")
	}
	bad := 0
	for i, r := range recs {
		if r.Seq != int64(i) {
			t.Fatalf("record %d has seq %d: an arrival has no record or two", i, r.Seq)
		}
		prompt += r.PromptTokens
		output += r.OutputTokens
		if r.Outcome != record.OK {
			continue
		}
		if !r.UsageFromServer || r.OutputTokens != vllmOutputTokens || r.PromptTokens == 0 {
			if bad++; bad <= 5 {
				t.Errorf("seq %d: usage from server %v, output %d (want %d), prompt %d", r.Seq, r.UsageFromServer, r.OutputTokens, vllmOutputTokens, r.PromptTokens)
			}
		}
		if r.FirstTokenNs < r.HeadersNs || r.DoneNs < r.FirstTokenNs {
			t.Errorf("seq %d: boundaries out of order: headers %d first token %d done %d", r.Seq, r.HeadersNs, r.FirstTokenNs, r.DoneNs)
		}
	}
	return prompt, output
}

// tokenEquality checks that the tokens surge recorded (from vLLM's usage)
// equal the increase of vLLM's own counters over the command.
func tokenEquality(t *testing.T, what string, recs []record.Record, p0, g0 float64) {
	t.Helper()
	prompt, output := checkVLLMRecords(t, recs)
	p1, g1 := vllmCounters(t)
	t.Logf("%s tokens: output Σ records %d = vllm:generation_tokens_total Δ %.0f: %v; prompt Σ records %d, vllm:prompt_tokens_total Δ %.0f: %v (%d requests)",
		what, output, g1-g0, float64(output) == g1-g0, prompt, p1-p0, float64(prompt) == p1-p0, len(recs))
	if float64(output) != g1-g0 {
		t.Errorf("%s: surge recorded %d output tokens, vLLM generated %.0f", what, output, g1-g0)
	}
	if float64(prompt) != p1-p0 {
		t.Errorf("%s: surge recorded %d prompt tokens, vLLM prefilled %.0f", what, prompt, p1-p0)
	}
}

func okCount(recs []record.Record) int {
	n := 0
	for _, r := range recs {
		if r.Outcome == record.OK {
			n++
		}
	}
	return n
}

func readEngineCSV(t *testing.T, path string) []scrape.Sample {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := scrape.ReadCSV(f)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestVLLM runs surge's commands against a real vLLM in the order a user
// would: a closed-loop sweep, a capacity search, a run at the suggested
// baseline, and bursts of 2× and 5× over half the measured capacity. The
// figures are logged for CI's log and BENCHMARKS.md.
func TestVLLM(t *testing.T) {
	vllmEngine(t)
	dir := t.TempDir()
	sustainable := 0.0
	maxRPS := 0.0

	// What vLLM counts when a client cancels a stream: the simulator
	// imitates it (docs/engines-vllm.md).
	t.Run("client-abort", func(t *testing.T) {
		base, model, _ := vllmEngine(t)
		names := []string{`vllm:request_success_total{finished_reason="abort"`, "vllm:request_success_total",
			"vllm:e2e_request_latency_seconds_count", "vllm:request_queue_time_seconds_count"}
		before := vllmSeries(t, names...)
		body := fmt.Sprintf(`{"model":%q,"prompt":"hello world","max_tokens":900,"ignore_eos":true,"stream":true}`, model)
		resp, err := http.Post(base+"/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(resp.Body)
		if _, err := br.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
		resp.Body.Close() // cancel after the first chunk
		deadline := time.Now().Add(20 * time.Second)
		for vllmSeries(t, "vllm:num_requests_running")[0] > 0 && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		time.Sleep(time.Second) // the next stats update
		after := vllmSeries(t, names...)
		d := make([]float64, len(names))
		for i := range names {
			d[i] = after[i] - before[i]
		}
		t.Logf("a client's cancelled stream: request_success_total{abort} +%.0f, request_success_total +%.0f, e2e histogram +%.0f, queue-time histogram +%.0f",
			d[0], d[1], d[2], d[3])
		if d[0] != 0 || d[1] != 0 || d[2] != 0 || d[3] != 0 {
			t.Errorf("vLLM counted a client's cancellation (%v): the simulator, which does not, must change", d)
		}
	})

	t.Run("sweep", func(t *testing.T) {
		sw := filepath.Join(dir, "sweep")
		_, g0 := vllmCounters(t)
		if _, code := vsurge(t, "sweep", "--concurrency", "1,4,8,16", "--duration", "8s", "--warmup", "2s", "-o", sw); code != 0 && code != 1 && code != 5 {
			t.Fatalf("sweep exit %d", code)
		}
		sweep := readSweep(t, sw, 4)
		output := 0
		var line []string
		for i, l := range sweep.Levels {
			recs := readRecords(t, filepath.Join(sw, fmt.Sprintf("level-%02d-%s", i+1, l.Name), "requests.jsonl"))
			_, out := checkVLLMRecords(t, recs)
			output += out
			maxRPS = max(maxRPS, l.Measure.RequestRPS)
			line = append(line, fmt.Sprintf("%s %.2f req/s", l.Name, l.Measure.RequestRPS))
		}
		t.Logf("sweep (closed loop, max-num-seqs %s): %s", os.Getenv("VLLM_MAX_NUM_SEQS"), strings.Join(line, ", "))
		// The sweep's settle probes are requests too, so the counters rise
		// by at least the records' tokens.
		if _, g1 := vllmCounters(t); g1-g0 < float64(output) {
			t.Errorf("sweep: vLLM generated %.0f tokens, fewer than the %d surge recorded", g1-g0, output)
		}
	})

	t.Run("capacity", func(t *testing.T) {
		cp := filepath.Join(dir, "capacity")
		start := 2.0
		if maxRPS > 0 {
			start = math.Round(maxRPS/4*10) / 10
		}
		// An SLO that ~80 requests per step can decide (a p99 needs 368,
		// a 99% goodput 368 all good; a p95 needs 72, a 90% goodput 36):
		// the search's steps must PASS or FAIL, not stop INCONCLUSIVE.
		out, code := vsurge(t, "capacity", "--start-rps", strconv.FormatFloat(start, 'f', -1, 64), "--min-requests", "80",
			"--step-duration", "10s", "--max-step-duration", "14s", "--tolerance", "0.15",
			"--slo-e2e-p99", "0", "--slo-goodput", "0.9", "-o", cp)
		// On 2 cores shared with other work, surge itself can miss its
		// schedule at the higher steps; the search then stops with a lower
		// bound and says so (exit 1). That is surge judging its own limit
		// correctly, not a wrong figure: accept it, with the bound.
		generatorLimited := code == 1 && strings.Contains(out, "the load generator could not keep its schedule")
		if code != 0 && !generatorLimited {
			t.Fatalf("capacity exit %d", code)
		}
		capj := readCapacity(t, cp)
		t.Logf("capacity: sustainable %.2f req/s (SLO: TTFT p95 ≤ 2s, goodput ≥ 90%%), suggested baseline %.2f req/s, bounded %v; sweep max %.2f req/s",
			capj.Sustainable, capj.Suggested, capj.Bounded, maxRPS)
		if generatorLimited {
			t.Logf("capacity: the load generator could not keep its schedule at the last step on this machine: %.2f req/s is a lower bound", capj.Sustainable)
		}
		// The open-loop sustainable rate cannot be far above the closed-loop
		// saturated throughput. Not equal: an 8–12 s step slightly above
		// saturation passes a 2 s TTFT SLO while its backlog stays under 2 s
		// of work (measured: 19 req/s sustainable, 15 req/s at c8–c16).
		if (!capj.Bounded && !generatorLimited) || capj.Sustainable <= 0 || (maxRPS > 0 && capj.Sustainable > 1.5*maxRPS) {
			t.Errorf("sustainable %.2f req/s vs saturated %.2f req/s (bounded %v)", capj.Sustainable, maxRPS, capj.Bounded)
		}
		sustainable = capj.Sustainable
	})

	// half is the burst baseline: about half the measured capacity.
	half := func() float64 {
		c := sustainable
		if c <= 0 {
			c = maxRPS
		}
		if c <= 0 {
			c = 8
		}
		return math.Max(1, math.Round(c/2*10)/10)
	}

	// Multi-turn sessions against a real prefix cache: the context grows
	// every turn, the nonce keeps first turns unique (no cache hit), and
	// every later turn finds the turn before's prompt in vLLM's cache
	// (cached_tokens, --enable-prompt-tokens-details; CPU blocks of 128).
	t.Run("sessions", func(t *testing.T) {
		out := filepath.Join(dir, "sessions")
		if _, code := vsurge(t, "run", "--sessions", "--rate", "1", "--duration", "12s", "--session-turns", "3",
			"--think-time", "200ms", "--turn-tokens", "40", "--session-drain", "30s", "--prompt-tokens", "300", "-o", out); code != 0 && code != 5 {
			t.Fatalf("exit %d", code)
		}
		recs := readRecords(t, filepath.Join(out, "requests.jsonl"))
		byTurn := checkSessions(t, recs, 3)
		prompt := map[int64]int{} // session → its turn-before's server prompt tokens
		for _, turn := range byTurn {
			for _, r := range turn {
				switch {
				case r.Turn == 1 && r.CachedTokens != 0:
					t.Errorf("session %d turn 1: %d cached tokens: the nonce must keep first turns unique", r.Session, r.CachedTokens)
				case r.Turn > 1 && (2*r.CachedTokens < prompt[r.Session] || r.CachedTokens >= r.PromptTokens):
					t.Errorf("session %d turn %d: %d cached of %d prompt tokens, the turn before sent %d: vLLM's cache must serve most of it",
						r.Session, r.Turn, r.CachedTokens, r.PromptTokens, prompt[r.Session])
				}
				prompt[r.Session] = r.PromptTokens
			}
		}
	})

	t.Run("run", func(t *testing.T) {
		run := filepath.Join(dir, "run")
		rate := half()
		p0, g0 := vllmCounters(t)
		if _, code := vsurge(t, "run", "--rate", strconv.FormatFloat(rate, 'f', -1, 64), "--duration", "15s", "--ttft-deadline", "5s",
			"--otlp-listen", otlpListen(t), "-o", run); code != 0 && code != 1 && code != 5 {
			t.Fatalf("exit %d", code)
		}
		recs := readRecords(t, filepath.Join(run, "requests.jsonl"))
		if ok := okCount(recs); ok != len(recs) {
			t.Errorf("only %d of %d ok at %.1f req/s (half the capacity)", ok, len(recs), rate)
		}
		tokenEquality(t, "run", recs, p0, g0)
		sum := readSummary(t, filepath.Join(run, "summary.json"))
		if sum.Engine.State != "ok" {
			t.Errorf("engine metrics state %q, want ok (%+v)", sum.Engine.State, sum.Engine)
		}
		qw := sum.EngineWait["main"]
		if !qw.Available || qw.Count <= 0 {
			t.Fatalf("queue wait from vllm:request_queue_time_seconds unavailable: %+v", qw)
		}
		// Below capacity the engine adds only a few ms around itself:
		// surge's completion and vLLM's own e2e agree per request.
		if d50, _, _ := spanAgreement(t, "run", recs, sum); d50 > 15 {
			t.Errorf("surge's completion from send exceeds vLLM's e2e by %.2f ms at the median", d50)
		}
		main, _ := sum.Analysis.Phase("main")
		t.Logf("run at %.1f req/s: TTFT from schedule p50 %.1f ms p95 %.1f ms; engine queue wait mean %.3f ms over %.0f requests, p50 %s",
			rate, main.Latency.TTFTSchedule.P50Ms, main.Latency.TTFTSchedule.P95Ms, qw.MeanMs, qw.Count, atMost(qw.P50Ms, qw.P50AtMost))
		// Below capacity the waits are far below vLLM's first queue-time
		// bucket (0.3 s): the percentiles are that bound, never an
		// interpolated fraction of it.
		if qw.MeanMs < 300 && !qw.P50AtMost {
			t.Errorf("mean queue wait %.3f ms, yet p50 %.1f ms is not reported as ≤ the first bucket", qw.MeanMs, qw.P50Ms)
		}
	})

	for _, k := range []int{2, 5} {
		t.Run(fmt.Sprintf("burst-%dx", k), func(t *testing.T) {
			bd := filepath.Join(dir, fmt.Sprintf("burst%d", k))
			base := half()
			_, g0 := vllmCounters(t)
			// The baseline spans the three recovery windows a recovery is
			// judged against (judge.RecoveryWindowFor), at least 10 s.
			baseline := max(10*time.Second, 3*judge.RecoveryWindowFor(base, 2*time.Second))
			if _, code := vsurge(t, "burst", "--baseline-rps", strconv.FormatFloat(base, 'f', -1, 64), "--multipliers", strconv.Itoa(k),
				"--warmup", "3s", "--baseline", baseline.String(), "--burst", "6s", "--recovery", "15s", "--recovery-limit", "40s",
				"--window", "2s", "--recovery-metric", "ttft", "--settle-timeout", "30s", "--otlp-listen", otlpListen(t), "-o", bd); code != 0 && code != 1 && code != 5 {
				t.Fatalf("exit %d", code)
			}
			run := filepath.Join(bd, fmt.Sprintf("burst-%dx", k))
			recs := readRecords(t, filepath.Join(run, "requests.jsonl"))
			_, output := checkVLLMRecords(t, recs)
			// The settle gate's probe requests also generate tokens.
			if _, g1 := vllmCounters(t); g1-g0 < float64(output) {
				t.Errorf("vLLM generated %.0f tokens, fewer than the %d surge recorded", g1-g0, output)
			}
			sum := readSummary(t, filepath.Join(run, "summary.json"))
			for _, ph := range []string{"baseline", "burst", "recovery"} {
				if qw := sum.EngineWait[ph]; !qw.Available {
					t.Errorf("phase %s: no queue wait from vllm:request_queue_time_seconds deltas: %s", ph, qw.Reason)
				}
			}
			if sum.Burst == nil {
				t.Fatal("summary.json has no burst")
			}
			bp, _ := sum.Analysis.Phase("burst")
			bl, _ := sum.Analysis.Phase("baseline")
			burstStart, burstEnd := bp.StartMs/1000, float64(sum.Burst.BurstEndNs)/1e9
			samples := readEngineCSV(t, filepath.Join(run, "engine.csv"))
			peak, peakAt, baseMax := 0.0, 0.0, 0.0
			for _, s := range samples {
				ts := float64(s.TNs) / 1e9
				switch {
				case ts >= bl.StartMs/1000 && ts < burstStart:
					baseMax = max(baseMax, s.Waiting)
				case ts >= burstStart && ts <= burstEnd+2:
					if s.Waiting > peak {
						peak, peakAt = s.Waiting, ts
					}
				}
			}
			// Drained: the first sample with nothing waiting after the
			// peak, counted from the end of the burst (0 if the queue was
			// empty again before the burst ended).
			drainedAt := math.NaN()
			for _, s := range samples {
				if ts := float64(s.TNs) / 1e9; ts > peakAt && s.Waiting == 0 {
					drainedAt = ts
					break
				}
			}
			drain := math.Max(0, drainedAt-burstEnd)
			qwb, qwr := sum.EngineWait["burst"], sum.EngineWait["recovery"]
			t.Logf("burst %d× over %.1f req/s: vllm:num_requests_waiting baseline max %.0f, burst peak %.0f at %.1fs (burst %.1f–%.1fs), drained %.1fs after the burst; "+
				"queue wait mean baseline %.1f ms, burst %.1f ms (p99 %s), recovery %.1f ms; TTFT p95 baseline %.0f ms, burst %.0f ms; %d/%d ok",
				k, base, baseMax, peak, peakAt, burstStart, burstEnd, drain,
				sum.EngineWait["baseline"].MeanMs, qwb.MeanMs, atMost(qwb.P99Ms, qwb.P99AtMost), qwr.MeanMs,
				bl.Latency.TTFTSchedule.P95Ms, bp.Latency.TTFTSchedule.P95Ms, okCount(recs), len(recs))
			if k == 5 {
				// 5 × half the capacity is 2.5× what vLLM completes:
				// requests must wait in its queue, and the queue must drain.
				if peak <= baseMax || peak < 1 {
					t.Errorf("vllm:num_requests_waiting did not rise in the burst: peak %.0f, baseline max %.0f", peak, baseMax)
				}
				if qwb.MeanMs <= sum.EngineWait["baseline"].MeanMs {
					t.Errorf("queue wait did not grow in the burst: %.1f ms vs baseline %.1f ms", qwb.MeanMs, sum.EngineWait["baseline"].MeanMs)
				}
			}
			// The queue must drain: within the run (drain above), or at the
			// latest soon after the load stopped (a 2× burst is the whole
			// capacity, so on a busy machine its backlog can outlast the
			// recovery phase).
			if math.IsNaN(drainedAt) {
				t0 := time.Now()
				for vllmSeries(t, "vllm:num_requests_waiting")[0] > 0 && time.Since(t0) < 2*time.Minute {
					time.Sleep(250 * time.Millisecond)
				}
				w := vllmSeries(t, "vllm:num_requests_waiting")[0]
				t.Logf("burst %d×: %.0f waiting at the run's last sample; the queue drained %.1fs after surge stopped (now %.0f)",
					k, samples[len(samples)-1].Waiting, time.Since(t0).Seconds(), w)
				if w > 0 {
					t.Errorf("vllm:num_requests_waiting never drained: %.0f waiting 2 min after the run", w)
				}
			}
			// Latency recovery and the engine queue's return to its
			// baseline level, side by side (issue 25): within one
			// recovery window of each other when both are known.
			rec := sum.Verdicts.Recovery
			t.Logf("burst %d× recovery: %s; engine queue %+v; latency recovered %v at %.1fs (earliest %.1fs), queue drained %v at %.1fs, window %.1fs",
				k, rec.Message, rec.Queue, rec.Recovered, rec.RecoveryTimeMs/1000, rec.EarliestMs/1000, rec.Queue.Drained, rec.Queue.DrainedMs/1000, rec.ResolutionMs/1000)
			if !rec.Queue.Measured {
				t.Errorf("burst %d×: the engine queue's drain was not measured: %s", k, rec.Queue.Reason)
			}
			if rec.Recovered && rec.Queue.Drained && math.Abs(rec.RecoveryTimeMs-rec.Queue.DrainedMs) > rec.ResolutionMs {
				t.Errorf("burst %d×: latency recovered %.1fs after the burst, the queue drained at %.1fs: more than a window (%.1fs) apart",
					k, rec.RecoveryTimeMs/1000, rec.Queue.DrainedMs/1000, rec.ResolutionMs/1000)
			}
			// Per request, by arrival phase: vLLM's own queue wait beside
			// surge's TTFT from send.
			spanAgreement(t, fmt.Sprintf("burst %d×", k), recs, sum)
			for _, ph := range []string{"baseline", "burst", "recovery"} {
				et, ok := sum.EngineTiming[ph]
				p, _ := sum.Analysis.Phase(ph)
				if !ok || !et.Queue.Available {
					t.Errorf("burst %d× %s: no per-request engine queue (%+v)", k, ph, et)
					continue
				}
				t.Logf("burst %d× %s (by arrival): engine queue per request p50 %.1f ms p95 %.1f ms p99 %.1f ms; surge TTFT from send p50 %.1f ms p95 %.1f ms (%d of %d timed)",
					k, ph, et.Queue.P50Ms, et.Queue.P95Ms, et.Queue.P99Ms, p.Latency.TTFTSend.P50Ms, p.Latency.TTFTSend.P95Ms, et.Timed, et.OK)
			}
			if k == 5 {
				if b, bl := sum.EngineTiming["burst"].Queue, sum.EngineTiming["baseline"].Queue; b.P95Ms <= bl.P95Ms {
					t.Errorf("5× burst: per-request engine queue p95 %.1f ms did not exceed the baseline's %.1f ms", b.P95Ms, bl.P95Ms)
				}
			}
			if a := os.Getenv("SURGE_ARTIFACTS"); a != "" && k == 5 {
				os.WriteFile(filepath.Join(a, "vllm-burst5x-engine.csv"), mustRead(t, filepath.Join(run, "engine.csv")), 0o644)
			}
		})
	}
	if a := os.Getenv("SURGE_ARTIFACTS"); a != "" {
		if res, err := http.Get(os.Getenv("VLLM_METRICS_URL")); err == nil {
			var b strings.Builder
			sc := bufio.NewScanner(res.Body)
			sc.Buffer(make([]byte, 64<<10), 1<<20)
			for sc.Scan() {
				b.WriteString(sc.Text() + "\n")
			}
			res.Body.Close()
			os.WriteFile(filepath.Join(a, "vllm-metrics.txt"), []byte(b.String()), 0o644)
		}
	}
}

func atMost(ms float64, upper bool) string {
	s := strconv.FormatFloat(ms, 'f', 1, 64) + " ms"
	if upper {
		return "≤ " + s
	}
	return s
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestAPIsAgainstVLLM: vLLM's Responses and Messages APIs, each read from
// its own events, at 1 req/s: every request ok; the tokens surge took from
// each API's own usage equal the increase of vLLM's counters; each request
// joins its llm_request span, surge's completion agrees with vLLM's e2e,
// and its TTFT from send with vLLM's queue + prefill. vLLM's Messages API
// drops ignore_eos, so its answers may end before 32 tokens.
func TestAPIsAgainstVLLM(t *testing.T) {
	for _, api := range []string{"responses", "messages"} {
		t.Run(api, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), api)
			p0, g0 := vllmCounters(t)
			if _, code := vsurge(t, "run", "--api", api, "--rate", "1", "--duration", "12s", "--ttft-deadline", "5s",
				"--otlp-listen", otlpListen(t), "-o", dir); code != 0 && code != 1 && code != 5 {
				t.Fatalf("exit %d", code)
			}
			recs := readRecords(t, filepath.Join(dir, "requests.jsonl"))
			var prompt, output int
			var ttft []float64
			for i, r := range recs {
				if r.Seq != int64(i) {
					t.Fatalf("record %d has seq %d: an arrival has no record or two", i, r.Seq)
				}
				prompt += r.PromptTokens
				output += r.OutputTokens
				if r.Outcome != record.OK {
					t.Errorf("seq %d: %s %q", r.Seq, r.Outcome, r.Error)
					continue
				}
				if !r.UsageFromServer || r.PromptTokens == 0 || r.OutputTokens == 0 || r.OutputTokens > vllmOutputTokens ||
					api == "responses" && r.OutputTokens != vllmOutputTokens {
					t.Errorf("seq %d: usage from server %v, output %d (asked %d), prompt %d", r.Seq, r.UsageFromServer, r.OutputTokens, vllmOutputTokens, r.PromptTokens)
				}
				if r.FirstTokenNs < r.HeadersNs || r.DoneNs < r.FirstTokenNs || r.UnknownEvents != 0 {
					t.Errorf("seq %d: headers %d first token %d done %d, unknown events %d", r.Seq, r.HeadersNs, r.FirstTokenNs, r.DoneNs, r.UnknownEvents)
				}
				if r.EngineQueueNs != record.None && r.EnginePrefillNs != record.None {
					ttft = append(ttft, float64(r.FirstTokenNs-r.SentNs-r.EngineQueueNs-r.EnginePrefillNs)/1e6)
				}
			}
			p1, g1 := vllmCounters(t)
			t.Logf("%s tokens: output Σ records %d, vllm:generation_tokens_total Δ %.0f; prompt Σ records %d, vllm:prompt_tokens_total Δ %.0f (%d requests)",
				api, output, g1-g0, prompt, p1-p0, len(recs))
			if float64(output) != g1-g0 || float64(prompt) != p1-p0 {
				t.Errorf("%s: surge recorded %d output and %d prompt tokens, vLLM counted %.0f and %.0f", api, output, prompt, g1-g0, p1-p0)
			}
			sum := readSummary(t, filepath.Join(dir, "summary.json"))
			if d50, _, _ := spanAgreement(t, api, recs, sum); d50 > 15 {
				t.Errorf("%s: surge's completion from send exceeds vLLM's e2e by %.2f ms at the median", api, d50)
			}
			if len(ttft) == 0 {
				t.Fatalf("%s: no request had vLLM's queue and prefill times", api)
			}
			sort.Float64s(ttft)
			med := ttft[len(ttft)/2]
			t.Logf("%s: surge TTFT from send − (vLLM queue + prefill), ms, n=%d: min %.2f, p50 %.2f, max %.2f", api, len(ttft), ttft[0], med, ttft[len(ttft)-1])
			if med < -2 || med > 50 {
				t.Errorf("%s: TTFT from send disagrees with vLLM's queue + prefill by %.2f ms at the median", api, med)
			}
		})
	}
}

// TestPoolingAgainstVLLM: vLLM serving the tiny model as an embedding
// model (scripts/vllm-e2e.sh with SURGE_VLLM_CONVERT=embed), which answers
// embeddings and, as a bi-encoder, rerank. At 2 req/s of 4 texts (4
// documents and a query) every request is ok, carries its inputs and no
// output, and the prompt tokens surge took from each answer's usage equal
// the increase of vLLM's own prompt-token counter.
func TestPoolingAgainstVLLM(t *testing.T) {
	if os.Getenv("VLLM_CONVERT") != "embed" {
		t.Skip("needs vLLM serving an embedding model: SURGE_VLLM_CONVERT=embed scripts/vllm-e2e.sh")
	}
	base, model, _ := vllmEngine(t)
	for _, api := range []string{"embeddings", "rerank"} {
		t.Run(api, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), api)
			p0, g0 := vllmCounters(t)
			args := []string{"run", "--target", base, "--model", model, "--api", api, "--inputs", "4", "--prompt-tokens", "48",
				"--rate", "2", "--duration", "10s", "-q", "-o", dir}
			if api == "rerank" {
				args = append(args, "--query-tokens", "16")
			}
			t0 := time.Now()
			out, err := exec.Command(surgeBin, args...).CombinedOutput()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			t.Logf("surge %s → exit %d in %.0fs\n%s", strings.Join(args, " "), code, time.Since(t0).Seconds(), out)
			if code != 0 && code != 1 && code != 5 {
				t.Fatalf("exit %d", code)
			}
			recs := readRecords(t, filepath.Join(dir, "requests.jsonl"))
			prompt := 0
			var lat []float64
			for i, r := range recs {
				if r.Seq != int64(i) {
					t.Fatalf("record %d has seq %d: an arrival has no record or two", i, r.Seq)
				}
				prompt += r.PromptTokens
				if r.Outcome != record.OK {
					t.Errorf("seq %d: %s %q", r.Seq, r.Outcome, r.Error)
					continue
				}
				if r.Inputs != 4 || !r.UsageFromServer || r.PromptTokens < 4 || r.OutputTokens != 0 || r.FirstTokenNs != r.DoneNs {
					t.Errorf("seq %d: inputs %d, usage from server %v, prompt %d, output %d, first token %d done %d",
						r.Seq, r.Inputs, r.UsageFromServer, r.PromptTokens, r.OutputTokens, r.FirstTokenNs, r.DoneNs)
				}
				lat = append(lat, float64(r.E2ESend())/1e6)
			}
			p1, g1 := vllmCounters(t)
			sort.Float64s(lat)
			t.Logf("%s: %d requests; prompt tokens Σ records %d, vllm:prompt_tokens_total Δ %.0f, generation Δ %.0f; latency p50 %.1f ms",
				api, len(recs), prompt, p1-p0, g1-g0, lat[len(lat)/2])
			if float64(prompt) != p1-p0 {
				t.Errorf("%s: surge recorded %d prompt tokens, vLLM counted %.0f", api, prompt, p1-p0)
			}
		})
	}
}
