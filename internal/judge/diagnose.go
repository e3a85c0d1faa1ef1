package judge

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/record"
)

// The failure modes of a Diagnosis (docs/metrics.md "Diagnosis").
const (
	ModeHeld             = "held"              // no failure mode applies, and the SLO did not fail
	ModeMissed           = "missed the SLO"    // no failure mode applies, but the SLO failed (long answers, a few failures)
	ModeRejectedFast     = "rejected fast"     // 429/503 for a share of the arrivals, answered quickly
	ModeBacklogged       = "backlogged"        // accepted, then waited: TTFT growth, timeouts, late successes
	ModeRetriesAmplified = "retries amplified" // retries multiplied the load the target received
	ModeGeneratorLimited = "generator-limited" // surge did not send the schedule: the target was not tested
	ModeFailing          = "failing"           // errors (5xx other than 503, resets, broken streams) instead of answers
	ModeNotJudged        = "not judged"        // nothing to judge (no arrivals in the group)
	ModeUnusable         = "unusable"          // the run stopped early: its first requests all failed by a cause no load explains (Unusable)

	// The causes that no load explains (analyze.Fault), tried before
	// any mode of load.
	ModeUnreachable  = "unreachable"               // connections refused, DNS, TLS: nothing answered
	ModeNoResponse   = "no response"               // connections accepted, never answered
	ModeUnauthorized = "not authorized"            // 401, 403
	ModeNotInference = "not an inference endpoint" // 404, 405, HTML or JSON where an OpenAI stream was expected
	ModeBadRequest   = "refused as invalid"        // other 4xx
	ModeProtocol     = "protocol violation"        // broken or malformed streams, max_tokens ignored
	ModeQuota        = "quota"                     // 429 with rate-limit headers
)

// causeModes are the modes of the faults that no load explains.
var causeModes = map[analyze.Fault]string{
	analyze.FaultUnreachable: ModeUnreachable, analyze.FaultNoResponse: ModeNoResponse, analyze.FaultUnauthorized: ModeUnauthorized,
	analyze.FaultNotInference: ModeNotInference, analyze.FaultBadRequest: ModeBadRequest, analyze.FaultProtocol: ModeProtocol,
	analyze.FaultQuota: ModeQuota,
}

// Thresholds of Diagnose. Each is a share of the judged group's offered
// arrivals, a factor between two groups, or a duration in ms.
const (
	// DiagMinSamples is how many values a distribution needs before its
	// percentiles are compared between groups: GeneratorMinSamples, the
	// smallest count surge judges anything on.
	DiagMinSamples = analyze.GeneratorMinSamples

	// DiagDropShare: generator drops above 1% of the arrivals mean the
	// schedule was not sent — 1% is where a P99 stops being about the
	// requests the schedule asked for.
	DiagDropShare = 0.01

	// DiagRetryAmplification: 1.5 HTTP attempts per arrival means the
	// target received half as much load again as was offered — enough to
	// turn a recoverable overload into a lasting one.
	DiagRetryAmplification = 1.5

	// DiagRejectShare: 429/503 for at least 5% of the arrivals is a
	// policy, not an accident (one rejection in twenty requests).
	DiagRejectShare = 0.05
	// DiagRejectFastMs: rejections answered within 1 s (median) are fast:
	// sooner than the default 2 s TTFT deadline, so the target said "no"
	// instead of making the client wait.
	DiagRejectFastMs = 1000.0

	// DiagErrorShare: other failures (5xx but 503, connection, stream,
	// invalid responses) for at least 5% of the arrivals, as for
	// rejections.
	DiagErrorShare = 0.05

	// DiagBacklogTimeoutShare: more than 1% timeouts make P99 unknown
	// (docs/method.md §7): requests waited longer than the client would.
	DiagBacklogTimeoutShare = 0.01
	// DiagBacklogLateShare: at least 10% of the arrivals succeeded but
	// missed their deadline (arrivals ok − goodput). Below that a few long
	// answers past the completion deadline can explain it without any
	// queue.
	DiagBacklogLateShare = 0.10
	// DiagBacklogTTFTFactor: TTFT p95 (from schedule) above the TTFT
	// deadline and at least 3× the reference's is a queue, not noise.
	DiagBacklogTTFTFactor = 3.0

	// DiagRiseFactor and DiagRiseMinMs: a latency "rose" when its
	// percentile at least doubled and grew by at least 250 ms — doubling
	// alone is noise for a 40 ms TTFT.
	DiagRiseFactor = 2.0
	DiagRiseMinMs  = 250.0
	// DiagHoldFactor: a latency "held" when it grew by at most 25%.
	DiagHoldFactor = 1.25
	// DiagWaitDominates: TTFT grew at least 4× as much (as a factor) as
	// TPOT: the time before the first token, not decoding, is what grew.
	DiagWaitDominates = 4.0
	// DiagCompletionRiseFactor and DiagCompletionRiseMinMs: completion p50
	// grew by half and by at least 500 ms.
	DiagCompletionRiseFactor = 1.5
	DiagCompletionRiseMinMs  = 500.0
	// DiagTTFTShareOfRise: TTFT is "steady" next to a slower completion when
	// its p50 grew by at most a fifth of the completion p50's growth.
	DiagTTFTShareOfRise = 0.2

	// DiagEngineNearEmpty and DiagEngineMinScrapes: the engine's waiting
	// queue peaked at ≤ 1 request over at least 3 scrapes of the group: the
	// engine admitted requests as they came.
	DiagEngineNearEmpty  = 1.0
	DiagEngineMinScrapes = 3
	// DiagOutsideQueueShare and DiagOutsideScrapeSpan: the wait is called
	// outside the engine only when the engine's queue-time p95 holds less
	// than half the TTFT rise, and the TTFT p95 spans at least two scrape
	// intervals (a gauge scraped every second cannot see a 300 ms queue).
	DiagOutsideQueueShare = 0.5
	DiagOutsideScrapeSpan = 2.0
	// DiagConnWaitMs: a connection-wait p95 of 100 ms is a client-side
	// queue worth naming (an idle pool hands out connections in µs).
	DiagConnWaitMs = 100.0
	// DiagPlateauRatio: completions below 90% of the arrival rate while
	// requests were accepted mean throughput stopped following the load.
	DiagPlateauRatio = 0.9
	// DiagStaleTimeoutShare: timeouts for at least 5% of a phase's arrivals
	// and at least half of its failures.
	DiagStaleTimeoutShare = 0.05
	// DiagCauseShare: failures of one cause that no load explains
	// (unreachable, not an inference endpoint, …) for at least 5% of the
	// arrivals make that cause the mode: it is named before any
	// hypothesis about load, which then is not offered.
	DiagCauseShare = 0.05
	// DiagIgnoredShare: answers past max_tokens for at least 5% of the
	// successful requests are a protocol violation worth the mode too:
	// the workload the run measured is not the one it asked for.
	DiagIgnoredShare = 0.05
)

// Diagnosis is how one run held or failed under its load (docs/metrics.md
// "Diagnosis"): a failure mode, the evidence for it in one sentence, and
// hypotheses drawn from how metrics moved together. It mirrors
// report.Diagnosis.
type Diagnosis struct {
	Scope   string `json:"scope"`   // e.g. "5×", "run"
	Mode    string `json:"mode"`    // one of the Mode constants
	Summary string `json:"summary"` // the evidence: which metric moved, by how much, in which phase
	Hints   []Hint `json:"hints,omitempty"`
}

// Hint is a hypothesis with the evidence behind it and what to check next.
type Hint struct {
	Hypothesis string `json:"hypothesis"`
	Evidence   string `json:"evidence"`
	Check      string `json:"check"`
}

// EngineQueue is what the engine's own metrics said about one group (a
// phase, or "overall"): its waiting and running gauges over the scrapes
// taken in the group's interval, and its measured queue wait.
type EngineQueue struct {
	Scrapes     int     // scrapes with the waiting gauge in the interval
	WaitingMax  float64 // requests
	WaitingMean float64 // requests
	RunningMax  float64 // requests; NaN when the running gauge was not scraped
	Wait        analyze.QueueWait
}

// DiagnosisInput is what Diagnose looks at for one run.
type DiagnosisInput struct {
	Scope  string
	Result *analyze.Result
	// Verdicts are the run's verdicts (Run); nil: judged here without an
	// SLO.
	Verdicts *Verdicts
	// Records streams the run's records (its requests.jsonl): the response
	// times of rejections, the 503s among the HTTP errors and a burst's
	// completions come from them, each read in one pass. nil: rejections
	// are the 429s only and their speed is unknown.
	Records record.Source
	// Tally, when set, is what the records say, gathered by the run's own
	// pass over them (NewDiagTally with DoneFrom of the run's analysis
	// configuration); Records is then not read.
	Tally *analyze.DiagTally
	// Generator is GeneratorCheck over the judged group's sends (the burst
	// phase, or the measured phases of a run); zero when not judged (virtual
	// time, too few sends).
	Generator analyze.Generator
	// Engine is the engine's queue per phase name and "overall"; nil
	// without engine metrics.
	Engine map[string]EngineQueue
	// Capacity is what the run knows of the target's capacity and the
	// fluid model's prediction; zero when unknown.
	Capacity DiagCapacity
	// Scaling are the simulator's scaling milestones (nil for a real
	// target): capacity that changed during the run.
	Scaling []ScaleEvent
	// Simulated says the target was surge's simulator: its hints name
	// only the layers it has (the engine model, surge's client), no
	// gateway, quota or application. False for a simulator run with its
	// gateway (quotas) in front.
	Simulated bool
}

// DiagCapacity is the target's capacity μ the run knows (the simulator's,
// --capacity-rps or measured from the burst's backlog) and what the fluid
// model predicted with it.
type DiagCapacity struct {
	Mu                  float64 // req/s; 0 unknown
	Source              string  // where Mu came from
	PredictedRecoveryMs float64 // the fluid model's recovery after the burst; NaN or < 0 unknown, +Inf never
}

// ScaleEvent is one scaling milestone of the simulator's autoscaler
// (sim.Event): Kind "first_served" is when an added replica first admitted
// a request.
type ScaleEvent struct {
	AtMs    float64 // since the run's start, as phases' StartMs
	Kind    string
	Replica int
}

// group is one set of arrivals Diagnose compares: a phase, a window or the
// measured phases together.
type group struct {
	label  string // "baseline", "burst", "first window (0s–10s)", …
	noun   string // the label in a sentence: "the burst", "the run"
	s      *analyze.Stats
	phases []string // phase labels of its records, for Rejections
	engine string   // key into DiagnosisInput.Engine
	slo    *Verdict // the group's SLO verdict; nil for windows
}

// Diagnose judges the failure mode of one run and the hints its metrics
// support (docs/metrics.md "Diagnosis"). A burst run is judged on its
// burst phase against its baseline phase (and the phase after the burst);
// a run without a burst phase on its measured phases together, its
// latencies compared between its first and last windows with enough
// samples. Modes are tried in this order, the first that applies wins:
//
//	not judged         the judged group has no arrivals
//	generator-limited  sent < GeneratorMinSendRatio of the schedule (Generator), schedule lag p95 > GeneratorMaxLagP99,
//	                   or drops > DiagDropShare
//	retries amplified  attempts per arrival ≥ DiagRetryAmplification
//	rejected fast      429 + 503 ≥ DiagRejectShare, median response ≤ DiagRejectFastMs
//	failing            other errors ≥ DiagErrorShare
//	backlogged         timeouts > DiagBacklogTimeoutShare, late successes ≥ DiagBacklogLateShare,
//	                   or TTFT p95 > the TTFT deadline and ≥ DiagBacklogTTFTFactor × the reference's
//	held               none of the above
//
// Generator-limited wins over every target mode: the target did not get
// the load the schedule meant.
func Diagnose(in DiagnosisInput) Diagnosis {
	d := Diagnosis{Scope: in.Scope, Mode: ModeNotJudged}
	r := in.Result
	if r == nil {
		d.Summary = "no analysis"
		return d
	}
	c := newDiagCase(in)
	st := c.stress.s
	if st.Offered == 0 {
		d.Summary = c.stress.noun + " had no arrivals"
		return d
	}
	if sum, hints, ok := c.generator(); ok {
		d.Mode, d.Summary, d.Hints = ModeGeneratorLimited, sum, hints
		return d
	}
	if mode, sum, hint, ok := c.cause(); ok {
		// A cause no load explains: named first, with what to check;
		// a hypothesis about load only for the server errors beside it.
		d.Mode, d.Summary, d.Hints = mode, sum, []Hint{hint}
		if ratio(c.faults[analyze.FaultServerError], st.Offered) >= DiagErrorShare {
			d.Hints = append(d.Hints, c.breaksHint())
		}
		return d
	}
	var modeHints []Hint
	switch {
	case st.Client.AttemptsPerArrival >= DiagRetryAmplification:
		d.Mode, d.Summary, modeHints = ModeRetriesAmplified, c.retriesSummary(), c.retriesHints()
	case c.rej.Share() >= DiagRejectShare && c.rej.Fast(DiagRejectFastMs):
		d.Mode, d.Summary, modeHints = ModeRejectedFast, c.rejectedSummary(), c.rejectedHints()
	case st.ErrorRate-c.rej.Share503() >= DiagErrorShare:
		d.Mode, d.Summary, modeHints = ModeFailing, c.failingSummary(), c.failingHints()
	default:
		if parts := c.backlogEvidence(); len(parts) > 0 {
			d.Mode, d.Summary = ModeBacklogged, strings.Join(parts, "; ")
		} else {
			d.Mode, d.Summary = ModeHeld, c.heldSummary()
			if v := c.stress.slo; v != nil && v.Outcome == Fail {
				d.Mode = ModeMissed // "held" beside a failed burst would read as "the burst was fine"
			}
		}
	}
	d.Hints = append(modeHints, c.relationHints(d.Mode)...)
	return d
}

// diagCase holds the groups of one diagnosis.
type diagCase struct {
	in     DiagnosisInput
	r      *analyze.Result
	v      *Verdicts
	stress group  // the group judged
	ref    *group // the reference its latencies are compared with; nil if none
	after  *group // the phase after the burst; nil if none
	// cmpFrom, cmpTo are the groups latency relationships compare: the
	// reference and the stress group for a burst, the first and last
	// windows for a run.
	cmpFrom, cmpTo *group
	rej            analyze.Rejections
	faults         analyze.FaultCounts // the judged group's failures by cause
	burst          bool
	phased         bool               // a run without a burst compared phase by phase (phasePair)
	seen           *analyze.DiagTally // what the records say (DiagnosisInput.Tally, or a pass over Records)
}

// phaseVerdict is the SLO verdict of the named phase; nil when there is
// none.
func (c *diagCase) phaseVerdict(name string) *Verdict {
	for i := range c.v.Phases {
		if c.v.Phases[i].Name == name {
			return &c.v.Phases[i].Verdict
		}
	}
	return nil
}

// engGroup is the group whose engine gauges the hints quote: the burst,
// or a phased run's worst phase.
func (c *diagCase) engGroup() *group {
	if c.phased {
		return c.cmpTo
	}
	return &c.stress
}

func newDiagCase(in DiagnosisInput) *diagCase {
	r := in.Result
	v := in.Verdicts
	if v == nil {
		v = Run(r, Rules{})
	}
	c := &diagCase{in: in, r: r, v: v}
	bi := slices.IndexFunc(r.Phases, func(p analyze.PhaseResult) bool { return p.Name == r.Settings.BurstPhase })
	if bi >= 0 {
		c.burst = true
		p := &r.Phases[bi]
		c.stress = group{label: p.Name, noun: "the " + p.Name, s: &p.Stats, phases: []string{p.Name}, engine: p.Name, slo: c.phaseVerdict(p.Name)}
		if b, ok := r.Phase(r.Settings.BaselinePhase); ok && b.Offered > 0 {
			i := slices.IndexFunc(r.Phases, func(p analyze.PhaseResult) bool { return p.Name == b.Name })
			c.ref = &group{label: b.Name, noun: "the " + b.Name, s: &r.Phases[i].Stats, phases: []string{b.Name}, engine: b.Name}
		}
		if bi+1 < len(r.Phases) && r.Phases[bi+1].Offered > 0 {
			p := &r.Phases[bi+1]
			c.after = &group{label: p.Name, noun: "the " + p.Name, s: &p.Stats, phases: []string{p.Name}, engine: p.Name}
		}
		c.cmpFrom, c.cmpTo = c.ref, &c.stress
	} else {
		var names []string
		for _, p := range r.Phases {
			if !p.Excluded {
				names = append(names, p.Name)
			}
		}
		c.stress = group{label: "run", noun: "the run", s: &r.Overall, phases: names, engine: "overall", slo: &v.Overall}
		if from, to, after, ok := c.phasePair(); ok {
			c.cmpFrom, c.cmpTo, c.after, c.phased = from, to, after, true
		} else {
			c.cmpFrom, c.cmpTo = c.windowPair(names)
		}
		c.ref = c.cmpFrom
	}
	doneFrom := int64(-1)
	if c.burst {
		p, _ := r.Phase(r.Settings.BurstPhase)
		doneFrom = int64(time.Duration(p.StartMs * 1e6)) // completionRate's burst start
	}
	if c.seen = in.Tally; c.seen == nil || c.seen.From() != doneFrom {
		c.seen = scanRecords(in.Records, doneFrom)
	}
	c.rej = c.seen.Rejections(c.stress.phases, c.stress.s.Offered)
	c.faults = c.seen.Faults(c.stress.phases)
	if in.Records == nil {
		c.rej.N429 = c.stress.s.Outcomes[record.RateLimited]
	}
	return c
}

// phasePair is, for a run of several measured phases, its first phase
// with at least DiagMinSamples TTFT values (the reference) and its worst
// phase after it — lowest goodput ratio, then highest TTFT p95 from
// schedule — and the phase after the worst, if any. ok is false with
// fewer than two such phases or when the first is the worst.
func (c *diagCase) phasePair() (first, worst, after *group, ok bool) {
	var idx []int
	for i := range c.r.Phases {
		p := &c.r.Phases[i]
		if !p.Excluded && p.Latency.TTFTSchedule.Count >= DiagMinSamples {
			idx = append(idx, i)
		}
	}
	if len(idx) < 2 {
		return nil, nil, nil, false
	}
	mk := func(i int) *group {
		p := &c.r.Phases[i]
		return &group{label: p.Name, noun: "phase " + p.Name, s: &p.Stats, phases: []string{p.Name}, engine: p.Name, slo: c.phaseVerdict(p.Name)}
	}
	w := idx[1]
	for _, i := range idx[2:] {
		a, b := &c.r.Phases[i], &c.r.Phases[w]
		if a.GoodputRatio < b.GoodputRatio || a.GoodputRatio == b.GoodputRatio && value(a.Latency.TTFTSchedule, analyze.Q95) > value(b.Latency.TTFTSchedule, analyze.Q95) {
			w = i
		}
	}
	f, fw := &c.r.Phases[idx[0]], &c.r.Phases[w]
	if fw.GoodputRatio >= f.GoodputRatio && value(fw.Latency.TTFTSchedule, analyze.Q95) <= value(f.Latency.TTFTSchedule, analyze.Q95) {
		return nil, nil, nil, false
	}
	first, worst = mk(idx[0]), mk(w)
	if w+1 < len(c.r.Phases) && !c.r.Phases[w+1].Excluded && c.r.Phases[w+1].Offered > 0 {
		after = mk(w + 1)
	}
	return first, worst, after, true
}

// windowPair is the first and the last window of a run's measured phases
// with at least DiagMinSamples TTFT values; nil, nil when there are not two.
func (c *diagCase) windowPair(phases []string) (first, last *group) {
	var idx []int
	for i := range c.r.Windows {
		w := &c.r.Windows[i]
		if slices.Contains(phases, w.Phase) && w.Latency.TTFTSend.Count >= DiagMinSamples {
			idx = append(idx, i)
		}
	}
	if len(idx) < 2 {
		return nil, nil
	}
	mk := func(which string, i int) *group {
		w := &c.r.Windows[i]
		sec := func(ms float64) string { return time.Duration(ms * 1e6).Round(time.Millisecond).String() }
		l := fmt.Sprintf("%s window (%s–%s)", which, sec(w.StartMs), sec(w.EndMs))
		return &group{label: l, noun: "the " + l, s: &w.Stats, engine: "overall"}
	}
	return mk("first", idx[0]), mk("last", idx[len(idx)-1])
}

// generator says whether surge failed to send the schedule.
func (c *diagCase) generator() (string, []Hint, bool) {
	st, g := c.stress.s, c.in.Generator
	lag := st.Latency.ScheduleLag
	lagLimit := float64(analyze.GeneratorMaxLagP99) / 1e6
	// The generator check also fails a phase on its lag p99 alone; a few
	// late sends (one in fifty 110 ms late on a busy machine) do not keep
	// the target from being tested, so the diagnosis asks for a sustained
	// lag: p95 above the same limit.
	short := g.ScheduledRPS > 0 && g.AchievedRPS < analyze.GeneratorMinSendRatio*g.ScheduledRPS
	sustained := lag.Count >= DiagMinSamples && lag.P95Ms > lagLimit
	switch {
	case short || sustained:
		var why []string
		if short {
			why = append(why, fmt.Sprintf("surge sent %s of the %s req/s scheduled in %s (%s)", num(g.AchievedRPS), num(g.ScheduledRPS), c.stress.noun, pct(g.AchievedRPS/g.ScheduledRPS)))
		}
		if sustained {
			why = append(why, fmt.Sprintf("schedule lag p95 %s, p99 %s in %s (limit %s)", lag.Text(analyze.Q95), lag.Text(analyze.Q99), c.stress.noun, analyze.FormatMs(lagLimit)))
		}
		return strings.Join(why, ", ") + ": the target was not tested at this load", []Hint{busyHint(lag)}, true
	case capDropRate(st) > DiagDropShare:
		drops := st.Outcomes[record.GeneratorDrop] - st.WorkerLostDrops
		return fmt.Sprintf("%d of %s's %d arrivals (%s) were dropped at the in-flight cap, never sent: the target was not tested at this load", drops, c.stress.noun, st.Offered, pct(capDropRate(st))),
			[]Hint{{
				Hypothesis: "the in-flight cap filled because the target held requests longer than the cap allows at this rate",
				Evidence:   fmt.Sprintf("%s dropped %s of its arrivals while TTFT from send p95 was %s", c.stress.noun, pct(capDropRate(st)), st.Latency.TTFTSend.Text(analyze.Q95)),
				Check:      "the requests in flight against --max-in-flight; raise it to at least the arrival rate × the longest latency you expect, to see how the target itself fails",
			}}, true
	case st.Offered > 0 && float64(st.WorkerLostDrops)/float64(st.Offered) > DiagDropShare:
		share := float64(st.WorkerLostDrops) / float64(st.Offered)
		return fmt.Sprintf("%d of %s's %d arrivals (%s) were never sent because a worker was lost or interrupted (their records name it): the target was not tested at this load", st.WorkerLostDrops, c.stress.noun, st.Offered, pct(share)),
			[]Hint{{
				Hypothesis: "a worker of the fleet stopped during the run (killed, crashed, its network dropped, or interrupted on its machine); its remaining arrivals were never sent",
				Evidence:   fmt.Sprintf("%d generator_drop records with cause worker_lost or worker_interrupted, whose error names the worker; the coordinator's LOST or INTERRUPTED line", st.WorkerLostDrops),
				Check:      "the lost worker's own log and machine; rerun with the fleet whole (the in-flight cap was not the cause)",
			}}, true
	}
	return "", nil, false
}

// capDropRate is the share of st's arrivals dropped at the in-flight cap
// (generator drops less those a lost worker left).
func capDropRate(st *analyze.Stats) float64 {
	if st.Offered == 0 {
		return 0
	}
	return float64(st.Outcomes[record.GeneratorDrop]-st.WorkerLostDrops) / float64(st.Offered)
}

func busyHint(lag analyze.Dist) Hint {
	return Hint{
		Hypothesis: "the machine running surge could not keep the schedule (CPU, or too many arrivals per second for one generator)",
		Evidence:   "schedule lag (sent − scheduled) " + lag.String(),
		Check:      "surge's CPU use during the run; fewer arrivals/s per generator, or a faster machine",
	}
}

func (c *diagCase) retriesSummary() string {
	st := c.stress.s
	cl := st.Client
	s := fmt.Sprintf("%s attempts per arrival in %s (%d attempts for %d arrivals): the target received %s req/s for the %s offered",
		num(cl.AttemptsPerArrival), c.stress.noun, cl.Attempts, st.Offered, num(cl.AttemptsRPS), num(st.OfferedRPS))
	return s + c.failureTail(st)
}

func (c *diagCase) retriesHints() []Hint {
	st := c.stress.s
	ev := fmt.Sprintf("%s attempts/s against %s req/s offered in %s", num(st.Client.AttemptsRPS), num(st.OfferedRPS), c.stress.noun)
	if c.ref != nil {
		ev += fmt.Sprintf(" (%s: %s attempts per arrival)", c.ref.label, num(c.ref.s.Client.AttemptsPerArrival))
	}
	return []Hint{{
		Hypothesis: "retries added load while the target was already overloaded, so the overload lasted longer",
		Evidence:   ev,
		Check:      "the retry policy (--retries, backoff, Retry-After honoured) and a retry budget; the 429/5xx that triggered the retries",
	}}
}

// failureTail lists a group's rejection, timeout and error shares, when
// any: "; 429 12%, timeouts 3%".
func (c *diagCase) failureTail(st *analyze.Stats) string {
	var parts []string
	if st.RateLimitRate > 0 {
		parts = append(parts, "429 "+pct(st.RateLimitRate))
	}
	if st.TimeoutRate > 0 {
		parts = append(parts, "timeouts "+pct(st.TimeoutRate))
	}
	if st.ErrorRate > 0 {
		parts = append(parts, "errors "+pct(st.ErrorRate))
	}
	if len(parts) == 0 {
		return ""
	}
	return "; " + strings.Join(parts, ", ")
}

func (c *diagCase) rejectedSummary() string {
	st, j := c.stress.s, c.rej
	var codes []string
	if j.N429 > 0 {
		codes = append(codes, fmt.Sprintf("%d × 429", j.N429))
	}
	if j.N503 > 0 {
		codes = append(codes, fmt.Sprintf("%d × 503", j.N503))
	}
	s := fmt.Sprintf("%s of %s's arrivals were rejected (%s)", pct(j.Share()), c.stress.noun, strings.Join(codes, ", "))
	if !math.IsNaN(j.MedianMs) {
		s += " with a median response of " + analyze.FormatMs(j.MedianMs)
	}
	s += fmt.Sprintf("; goodput %s of offered", pct(st.GoodputRatio))
	if st.Latency.TTFTSchedule.Count > 0 {
		s += ", TTFT p95 of the served " + st.Latency.TTFTSchedule.Text(analyze.Q95)
		if c.ref != nil && c.burst {
			s += fmt.Sprintf(" (%s %s)", c.ref.label, c.ref.s.Latency.TTFTSchedule.Text(analyze.Q95))
		}
	}
	return s
}

func (c *diagCase) rejectedHints() []Hint {
	st := c.stress.s
	rl := st.Client.RateLimit
	switch {
	case rl.Responses > 0 && (rl.LowestRemainingRequests == 0 || rl.LowestRemainingTokens == 0):
		which := "requests"
		if rl.LowestRemainingRequests != 0 {
			which = "tokens"
		}
		return []Hint{{
			Hypothesis: "an account or gateway rate limit rejected the requests, not the engine's queue",
			Evidence:   fmt.Sprintf("x-ratelimit-remaining-%s reached 0 in %s (%d responses carried rate-limit headers)", which, c.stress.noun, rl.Responses),
			Check:      "the quota's limits per minute and per day for this account and model; whether the 429s carried Retry-After",
		}}
	case rl.RetryAfter > 0 && c.in.Simulated:
		return []Hint{{
			Hypothesis: "the simulated engine sheds load with its admission limit (a bounded waiting queue answering 429 with Retry-After)",
			Evidence:   fmt.Sprintf("%d responses in %s carried Retry-After (longest %s)", rl.RetryAfter, c.stress.noun, analyze.FormatMs(rl.LongestRetryAfterMs)),
			Check:      "--max-waiting against the capacity (a longer queue trades rejections for waiting)",
		}}
	case rl.RetryAfter > 0:
		return []Hint{{
			Hypothesis: "the target sheds load with an admission limit (a bounded queue answering 429 with Retry-After)",
			Evidence:   fmt.Sprintf("%d responses in %s carried Retry-After (longest %s)", rl.RetryAfter, c.stress.noun, analyze.FormatMs(rl.LongestRetryAfterMs)),
			Check:      "the admission limit against the capacity (a longer queue trades rejections for waiting); whether clients honour Retry-After",
		}}
	}
	return []Hint{{
		Hypothesis: "something in front of the engine or the engine itself refuses work beyond a limit",
		Evidence:   fmt.Sprintf("%s of %s's arrivals got 429/503, without Retry-After", pct(c.rej.Share()), c.stress.noun),
		Check:      "the gateway's and the engine's admission or rate-limit settings; the status codes in requests.jsonl",
	}}
}

func (c *diagCase) failingSummary() string {
	st := c.stress.s
	var parts []string
	for _, o := range []record.Outcome{record.HTTPError, record.ConnError, record.StreamError, record.InvalidResponse} {
		if n := st.Outcomes[o]; n > 0 {
			if o == record.HTTPError && c.rej.N503 > 0 {
				n -= c.rej.N503
			}
			if n > 0 {
				parts = append(parts, fmt.Sprintf("%s %d", o, n))
			}
		}
	}
	return fmt.Sprintf("%s of %s's arrivals failed (%s)", pct(st.ErrorRate-c.rej.Share503()), c.stress.noun, strings.Join(parts, ", "))
}

func (c *diagCase) failingHints() []Hint {
	var hints []Hint
	failed := c.stress.s.ErrorRate - c.rej.Share503()
	invalid := ratio(c.rej.N4xx, c.rej.Offered)
	if c.rej.N4xx > 0 && invalid >= failed/2 {
		// Refused as invalid: no load explains a 400, 401, 404 or 413, and
		// they are at least half the failures, so they are said first.
		hints = append(hints, Hint{
			Hypothesis: "the target refused these requests as invalid (HTTP 4xx): the workload or the configuration, not the load",
			Evidence:   fmt.Sprintf("%s of %s's arrivals were refused with %s", pct(invalid), c.stress.noun, statusList(c.rej.Status4xx)),
			Check: "the server's log for the reason; 400: prompt + max_tokens against the model's context length (vLLM --max-model-len, " +
				"llama.cpp --ctx-size; shorten --prompt-tokens or --output-tokens); 401/403: the API key; 404: --model and the base URL",
		})
	}
	if failed-invalid < DiagErrorShare {
		return hints // what else failed would not have made the mode
	}
	return append(hints, c.breaksHint())
}

// breaksHint is the hypothesis that the target breaks under load: server
// errors where a working server would queue or reject.
func (c *diagCase) breaksHint() Hint {
	ev := fmt.Sprintf("errors %s of the arrivals in %s", pct(c.stress.s.ErrorRate), c.stress.noun)
	if c.ref != nil {
		ev += fmt.Sprintf(", %s in %s", pct(c.ref.s.ErrorRate), c.ref.label)
	}
	return Hint{
		Hypothesis: "the target, or something in front of it, breaks under this load instead of queueing or rejecting",
		Evidence:   ev,
		Check:      "the outcome and status of the failed requests in requests.jsonl, and the server's and gateway's logs for the same minutes",
	}
}

// statusList names statuses by count, most frequent first: "12 × 400,
// 1 × 404".
func statusList(by map[int]int64) string {
	codes := slices.Collect(maps.Keys(by))
	slices.SortFunc(codes, func(a, b int) int { return cmp.Or(cmp.Compare(by[b], by[a]), cmp.Compare(a, b)) })
	parts := make([]string, len(codes))
	for i, s := range codes {
		parts[i] = fmt.Sprintf("%d × %d", by[s], s)
	}
	return strings.Join(parts, ", ")
}

// backlogEvidence lists what says the target accepted work and then made
// it wait; empty when nothing does.
func (c *diagCase) backlogEvidence() []string {
	st := c.stress.s
	var parts []string
	deadline := c.r.Settings.TTFTDeadlineMs
	if from, to := c.cmpFrom, c.cmpTo; from != nil && to != nil {
		a, b := from.s.Latency.TTFTSchedule, to.s.Latency.TTFTSchedule
		if f, ok := factor(a, b, analyze.Q95); ok && f >= DiagBacklogTTFTFactor && value(b, analyze.Q95) > deadline {
			parts = append(parts, "TTFT p95 from schedule "+move(a, b, analyze.Q95, fromTo(from, to)))
		} else if !ok && a.Count > 0 && b.Count > 0 && value(b, analyze.Q95) > deadline {
			// Too few requests in the reference to compare quantiles, but
			// the TTFT over its deadline is evidence in its own right.
			parts = append(parts, fmt.Sprintf("TTFT p95 from schedule %s, over the %s deadline (%s had only %d requests to compare with)",
				move(a, b, analyze.Q95, fromTo(from, to)), analyze.FormatMs(deadline), from.label, a.Count))
		}
	}
	if st.TimeoutRate > DiagBacklogTimeoutShare {
		parts = append(parts, fmt.Sprintf("%s of %s's arrivals timed out", pct(st.TimeoutRate), c.stress.noun))
	}
	if st.LateRatio() >= DiagBacklogLateShare {
		parts = append(parts, fmt.Sprintf("%s succeeded but only %s in time", pct(st.ArrivalsOKRatio), pct(st.GoodputRatio)))
	}
	if c.rej.Share() >= DiagRejectShare && !c.rej.Fast(DiagRejectFastMs) {
		parts = append(parts, fmt.Sprintf("%s of %s's arrivals were rejected (429/503), but only after a median %s", pct(c.rej.Share()), c.stress.noun, analyze.FormatMs(c.rej.MedianMs)))
	}
	if len(parts) == 0 {
		return nil
	}
	if c.after != nil && c.ref != nil {
		a := c.after.s.Latency.TTFTSchedule
		if f, ok := factor(c.ref.s.Latency.TTFTSchedule, a, analyze.Q95); ok && f >= DiagBacklogTTFTFactor && value(a, analyze.Q95) > deadline {
			parts = append(parts, fmt.Sprintf("it persisted into %s (TTFT p95 %s)", c.after.noun, a.Text(analyze.Q95)))
		}
	}
	if c.burst {
		if rec := c.v.Recovery; rec.Outcome != Inconclusive {
			switch {
			case rec.Recovered && rec.RecoveryTimeMs == 0:
				parts = append(parts, "recovered from the first window after the burst")
			case rec.Recovered:
				s := "recovered " + analyze.FormatMs(rec.RecoveryTimeMs) + " after the burst"
				if pr := c.in.Capacity.PredictedRecoveryMs; pr >= 0 && !math.IsInf(pr, 0) {
					s += " (predicted " + analyze.FormatMs(pr) + ")"
				}
				parts = append(parts, s)
			default:
				parts = append(parts, "not recovered "+analyze.FormatMs(rec.ObservedMs)+" after the burst")
			}
		}
		if s := c.scalingText(); s != "" {
			parts = append(parts, s)
		}
	}
	return parts
}

// served are the times (ms since the run's start) the replicas the
// autoscaler added first served a request, in order.
func (c *diagCase) served() []ScaleEvent {
	var out []ScaleEvent
	for _, e := range c.in.Scaling {
		if e.Kind == "first_served" {
			out = append(out, e)
		}
	}
	return out
}

// scalingText says that capacity changed during a burst run: "the
// autoscaler added 2 replicas (replica 1 first served 51.7s after the
// burst's end, …)"; empty when no replica was added.
func (c *diagCase) scalingText() string {
	sv := c.served()
	p, ok := c.r.Phase(c.r.Settings.BurstPhase)
	if len(sv) == 0 || !ok {
		return ""
	}
	var at []string
	for _, e := range sv {
		at = append(at, fmt.Sprintf("replica %d first served %s", e.Replica, relTo(e.AtMs, p.StartMs, p.EndMs)))
	}
	n := "a replica"
	if len(sv) > 1 {
		n = strconv.Itoa(len(sv)) + " replicas"
	}
	return fmt.Sprintf("capacity changed during the run: the autoscaler added %s (%s)", n, strings.Join(at, ", "))
}

// relTo places t against the burst: "12s after the burst's start" while
// it lasted, "51.7s after the burst's end" after it, "before the burst".
func relTo(t, start, end float64) string {
	switch {
	case t < start:
		return analyze.FormatMs(start-t) + " before the burst"
	case t <= end:
		return analyze.FormatMs(t-start) + " after the burst's start"
	}
	return analyze.FormatMs(t-end) + " after the burst's end"
}

// scalingHint: the fluid prediction assumed a fixed μ, but replicas were
// added — a recovery faster than predicted is expected.
func (c *diagCase) scalingHint() (Hint, bool) {
	s := c.scalingText()
	if s == "" {
		return Hint{}, false
	}
	ev := strings.TrimPrefix(s, "capacity changed during the run: ")
	if rec, pr := c.v.Recovery, c.in.Capacity.PredictedRecoveryMs; rec.Recovered && pr >= 0 && !math.IsInf(pr, 0) {
		ev += fmt.Sprintf("; %s against %s predicted", recoveredText(rec.RecoveryTimeMs), analyze.FormatMs(pr))
	}
	if mu := c.in.Capacity.Mu; mu > 0 {
		ev += fmt.Sprintf(" with a fixed μ %s req/s", num(mu))
	}
	return Hint{
		Hypothesis: "capacity grew during the run (the autoscaler added replicas); the fluid prediction assumed a fixed μ, so a recovery faster than predicted is expected",
		Evidence:   ev,
		Check:      "the scaling milestones in report.html (scale_trigger → first_served) against the burst's length: how long the burst ran on one replica",
	}, true
}

func (c *diagCase) heldSummary() string {
	st := c.stress.s
	s := fmt.Sprintf("goodput %s of %s's arrivals", pct(st.GoodputRatio), c.stress.noun)
	sep := ", "
	switch v := c.stress.slo; {
	case v != nil && v.Outcome == Inconclusive && v.cancelledOnly():
		// Only the requests an interrupt cancelled decide the SLO: they
		// are surge's, not the target's (SLO.Interrupted).
		s, sep = "no queueing or rejections; the SLO is not judged: the requests surge cut short (interrupted, or ended before they did) decide it", "; "
	case v != nil && v.Outcome == Inconclusive:
		s, sep = s+fmt.Sprintf("; the SLO is inconclusive on %d requests (%s)", st.Offered, undecided(*v)), "; "
	case v != nil && v.Outcome == Fail:
		s, sep = "no queueing or rejections, but the SLO missed: "+c.missedText(*v), "; "
	}
	if from, to := c.cmpFrom, c.cmpTo; from != nil && to != nil {
		s += sep + "TTFT p95 from schedule " + move(from.s.Latency.TTFTSchedule, to.s.Latency.TTFTSchedule, analyze.Q95, fromTo(from, to))
	} else if st.Latency.TTFTSchedule.Count > 0 {
		s += sep + "TTFT p95 from schedule " + st.Latency.TTFTSchedule.Text(analyze.Q95)
	}
	if st.FailureRate == 0 {
		s += "; no rejections, timeouts, errors or drops"
	} else {
		s += "; failures " + pct(st.FailureRate)
	}
	if t := tokenlessText(st); t != "" {
		s += "; " + t
	}
	return s
}

// tokenlessText says how many ok answers carried no token (empty: never
// good, but neither late nor failed); "" when none did.
func tokenlessText(st *analyze.Stats) string {
	if st.Tokenless == 0 {
		return ""
	}
	return fmt.Sprintf("%d of %d ok answers carried no token (empty answers are never good)", st.Tokenless, st.Succeeded)
}

// missedText names the failing clauses of v, measured vs limit, and why
// when the evidence says: first tokens came in time while completion
// failed — long answers missed the completion deadline.
func (c *diagCase) missedText(v Verdict) string {
	var parts []string
	ttftOK, e2eFail := true, false
	for _, cl := range v.Clauses {
		if cl.Name == ClauseTTFTP95 && cl.Outcome == Fail {
			ttftOK = false
		}
		if cl.Name == ClauseE2EP99 && cl.Outcome == Fail {
			e2eFail = true
		}
		if cl.Outcome == Fail {
			parts = append(parts, cl.Short())
		}
	}
	s := strings.Join(parts, ", ")
	if ttftOK && e2eFail {
		s += fmt.Sprintf(" — first tokens came in time, long answers missed the %s completion deadline", analyze.FormatMs(c.r.Settings.E2EDeadlineMs))
	}
	return s
}

// undecided names v's inconclusive clauses: "p99 completion, goodput".
func undecided(v Verdict) string {
	var names []string
	for _, c := range v.Clauses {
		if c.Outcome == Inconclusive {
			names = append(names, c.Label())
		}
	}
	return strings.Join(names, ", ")
}

// engineCannotExplain is whether an engine whose waiting gauge stayed
// near empty really had no queue to explain a TTFT rise of riseMs (to a
// p95 of ttftMs over a group of durMs): the engine's own queue-time
// histogram, when scraped, must hold less than DiagOutsideQueueShare of
// the rise at its p95 (an upper bound counts as its bound), and the TTFT
// must last at least DiagOutsideScrapeSpan scrape intervals — a shorter
// wait can sit between two scrapes of the gauge. On vLLM at 2× its
// capacity's half, TTFT p95 rose 137 → 388 ms with the gauge at ≤ 1 while
// its queue-time p99 was 432 ms: the wait was inside.
func engineCannotExplain(eng *EngineQueue, riseMs, ttftMs, durMs float64) bool {
	if w := eng.Wait; w.Available && w.P95Ms >= DiagOutsideQueueShare*riseMs {
		return false
	}
	interval := durMs / float64(eng.Scrapes)
	return ttftMs >= DiagOutsideScrapeSpan*interval
}

// relationHints are the hypotheses from how metrics moved together.
func (c *diagCase) relationHints(mode string) []Hint {
	var out []Hint
	if h, ok := c.scalingHint(); ok {
		out = append(out, h)
	}
	from, to := c.cmpFrom, c.cmpTo
	eng := c.engine(c.engGroup().engine)
	outside := false
	if from != nil && to != nil {
		a, b := from.s.Latency.TTFTSend, to.s.Latency.TTFTSend
		ttftRose := rose(a, b, analyze.Q95)
		if ttftRose && eng != nil && eng.Scrapes >= DiagEngineMinScrapes && eng.WaitingMax <= DiagEngineNearEmpty &&
			engineCannotExplain(eng, value(b, analyze.Q95)-value(a, analyze.Q95), value(b, analyze.Q95), to.s.DurationMs) {
			outside = true
			ev := fmt.Sprintf("TTFT from send p95 %s while the engine's waiting queue peaked at %s over %d scrapes of %s", move(a, b, analyze.Q95, fromTo(from, to)), num(eng.WaitingMax), eng.Scrapes, c.engGroup().noun)
			if cw := to.s.Latency.ConnWait; cw.Count > 0 {
				ev += ", connection wait p95 " + cw.Text(analyze.Q95)
			}
			h := Hint{
				Hypothesis: "requests waited outside the engine (gateway, connection pool, network)",
				Evidence:   ev,
				Check:      "connection wait (surge opens up to --max-in-flight connections), a gateway or proxy in front of the engine (its queue, admission limit, Server-Timing), the network path",
			}
			if c.in.Simulated {
				h.Hypothesis = "requests waited outside the engine model: in surge's client (the simulator has no gateway or network in between)"
				h.Check = "connection wait (surge opens up to --max-in-flight connections) and the load generator's lag on this machine"
			}
			out = append(out, h)
		}
		if cw := to.s.Latency.ConnWait; cw.Count >= DiagMinSamples && value(cw, analyze.Q95) >= DiagConnWaitMs {
			out = append(out, Hint{
				Hypothesis: "requests waited for one of surge's own connections before being sent",
				Evidence:   fmt.Sprintf("connection wait p95 %s in %s", cw.Text(analyze.Q95), to.noun),
				Check:      "--max-in-flight (surge's connection pool is sized to it) against the concurrency (arrival rate × latency); the time to open a connection (TLS, DNS); the connection-wait column per phase",
			})
		}
		if h, ok := c.waitingHint(from, to, eng, outside); ok {
			out = append(out, h)
		}
		if h, ok := c.decodeHint(from, to, eng); ok {
			out = append(out, h)
		}
	}
	st := c.stress.s
	if rate, how, ok := c.completionRate(); ok && mode == ModeBacklogged && rate < DiagPlateauRatio*c.engGroup().s.OfferedRPS && st.RateLimitRate < DiagRejectShare {
		out = append(out, c.plateauHint(rate, how))
	}
	if h, ok := c.staleHint(); ok {
		out = append(out, h)
	}
	if cl := st.Client; cl.MaxTokensIgnored > 0 {
		out = append(out, Hint{
			Hypothesis: "the server ignored max_tokens, so answers ran longer than the workload asked and took more decode time",
			Evidence:   fmt.Sprintf("%d of %d successful requests in %s returned more tokens than asked", cl.MaxTokensIgnored, cl.MaxTokensChecked, c.stress.noun),
			Check:      "the server's handling of max_tokens (or max_completion_tokens) and output_tokens in requests.jsonl",
		})
	}
	return out
}

// plateauHint: completions stopped following the arrivals. Against the
// capacity μ the run knows it says how far apart they are: at μ the
// target's own limit was reached; well below it, some other layer
// limited, or timed-out requests took capacity without completing.
func (c *diagCase) plateauHint(rate float64, how string) Hint {
	g := c.engGroup()
	st := g.s
	h := Hint{
		Hypothesis: fmt.Sprintf("throughput saturated near %s req/s: a bottleneck in some layer", num(rate)),
		Evidence:   fmt.Sprintf("%s, against %s req/s arriving in %s", how, num(st.OfferedRPS), g.noun),
		Check:      "which layer limits: token quotas, connection limits, application concurrency, engine waiting requests, KV-cache memory",
	}
	if c.in.Simulated {
		h.Check = "the simulated engine's limits for these lengths (--replicas, --max-num-seqs, --kv-cache-tokens): the simulator has no gateway, quota or application in front of it"
	}
	mu := c.in.Capacity.Mu
	if mu <= 0 {
		return h
	}
	src := ""
	if c.in.Capacity.Source != "" {
		src = " (" + c.in.Capacity.Source + ")"
	}
	f := rate / mu
	h.Evidence += fmt.Sprintf("; μ %s req/s%s", num(mu), src)
	switch {
	case f >= DiagPlateauRatio && f <= 1/DiagPlateauRatio:
		h.Hypothesis = fmt.Sprintf("throughput saturated near %s req/s, at the capacity μ %s req/s: the target's own limit, not another layer", num(rate), num(mu))
		h.Check = "the capacity for this workload (replicas, max_num_seqs, KV-cache) against the burst rate"
	case f < DiagPlateauRatio && st.TimeoutRate >= DiagStaleTimeoutShare:
		h.Hypothesis = fmt.Sprintf("throughput saturated near %s req/s, %s of the capacity μ %s req/s: timed-out requests took capacity without completing, or another layer limits", num(rate), pct(f), num(mu))
		h.Evidence += fmt.Sprintf("; %s of %s's arrivals timed out", pct(st.TimeoutRate), g.noun)
		h.Check = "how much work the timed-out requests got before they left (output_tokens of the timeouts in requests.jsonl), then " + h.Check
	case f < DiagPlateauRatio && c.in.Simulated:
		h.Hypothesis = fmt.Sprintf("throughput saturated near %s req/s, %s of the capacity μ %s req/s: the engine model's batch or KV-cache limits for the burst's lengths (the simulator has no other layer)", num(rate), pct(f), num(mu))
	case f < DiagPlateauRatio:
		h.Hypothesis = fmt.Sprintf("throughput saturated near %s req/s, %s of the capacity μ %s req/s: a bottleneck in another layer", num(rate), pct(f), num(mu))
	default:
		h.Hypothesis = fmt.Sprintf("throughput saturated near %s req/s, above the capacity μ %s req/s the prediction used: μ underestimates this target", num(rate), num(mu))
		h.Check = "where μ came from" + src + "; --capacity-rps"
	}
	return h
}

// completionRate is the most the target completed once loaded, and how it
// was found: for a burst, μ as MeasureCapacity finds it (ok completions
// per second while the backlog drained); otherwise the highest completed/s
// of the windows from the judged group's start on. A phase's own
// completed/s would undercount a burst shorter than a request's latency.
func (c *diagCase) completionRate() (rate float64, how string, ok bool) {
	from, noun := math.Inf(-1), c.stress.noun
	if c.phased {
		from, noun = c.r.Phases[slices.IndexFunc(c.r.Phases, func(p analyze.PhaseResult) bool { return p.Name == c.cmpTo.label })].StartMs, c.cmpTo.noun
	}
	if c.burst {
		p, _ := c.r.Phase(c.r.Settings.BurstPhase)
		from = p.StartMs
		ms := func(v float64) time.Duration { return time.Duration(v * 1e6) }
		if mc := analyze.MeasureCapacity(c.r, c.seen.DoneOK(), ms(p.StartMs), ms(p.EndMs)); mc.OK {
			return mc.Mu, fmt.Sprintf("completions ran at %s req/s while the backlog drained", num(mc.Mu)), true
		}
	}
	for i := range c.r.Windows {
		w := &c.r.Windows[i]
		if w.StartMs < from || w.Phase == "" || !c.burst && !slices.Contains(c.stress.phases, w.Phase) {
			continue
		}
		rate, ok = max(rate, w.CompletedRPS), true
	}
	return rate, fmt.Sprintf("completions peaked at %s req/s (per %s window, from %s on)", num(rate), analyze.FormatMs(c.r.Settings.WindowMs), noun), ok
}

// engine is the engine queue of key, or nil without engine metrics.
func (c *diagCase) engine(key string) *EngineQueue {
	if c.in.Engine == nil {
		return nil
	}
	e, ok := c.in.Engine[key]
	if !ok || e.Scrapes == 0 && !e.Wait.Available {
		return nil
	}
	return &e
}

// waitingHint: TTFT from send rose while decode speed held (or grew far
// less) — the time before the first token is what grew.
func (c *diagCase) waitingHint(from, to *group, eng *EngineQueue, outside bool) (Hint, bool) {
	a, b := from.s.Latency.TTFTSend, to.s.Latency.TTFTSend
	if outside || !rose(a, b, analyze.Q95) {
		return Hint{}, false
	}
	ta, tb := from.s.Latency.TPOT, to.s.Latency.TPOT
	tf, tok := factor(ta, tb, analyze.Q50)
	ff, _ := factor(a, b, analyze.Q95)
	if !tok || tb.Count < DiagMinSamples {
		return Hint{}, false
	}
	ev := "TTFT from send p95 " + move(a, b, analyze.Q95, fromTo(from, to))
	switch {
	case tf <= DiagHoldFactor:
		ev += " while TPOT p50 held, " + move(ta, tb, analyze.Q50)
	case ff >= DiagWaitDominates*tf:
		ev += " while TPOT p50 grew far less, " + move(ta, tb, analyze.Q50)
	default:
		return c.saturatedHint(from, to, eng, ev+", and TPOT p50 "+move(ta, tb, analyze.Q50))
	}
	h := Hint{
		Hypothesis: "requests waited before their first token: queueing or prefill pressure",
		Check:      "engine queue telemetry (--metrics-url: waiting requests, queue time) and the prompt-length distribution (prompt_tokens in requests.jsonl)",
	}
	if eng != nil && eng.Scrapes >= DiagEngineMinScrapes && eng.WaitingMax <= DiagEngineNearEmpty && !eng.Wait.Available {
		// The gauge saw no queue, but the wait is shorter than what its
		// scrapes can see: say where it might be, not that it was there.
		ev += fmt.Sprintf("; the engine's waiting queue peaked at %s over %d scrapes of %s, too coarse to see waits this short", num(eng.WaitingMax), eng.Scrapes, c.engGroup().noun)
		h.Check = "the engine's queue-time histogram or per-request spans (--otlp-listen) for waits between scrapes, then prompt lengths (prompt_tokens in requests.jsonl)"
	} else if eng != nil && eng.Scrapes >= DiagEngineMinScrapes {
		h.Hypothesis = "requests queued in the engine before their first token"
		ev += fmt.Sprintf("; the engine's waiting queue peaked at %s in %s", num(eng.WaitingMax), c.engGroup().noun)
		if re := c.engine(from.engine); re != nil && re.Scrapes > 0 && (c.burst || c.phased) {
			ev += fmt.Sprintf(" (%s %s)", from.label, num(re.WaitingMax))
		}
		h.Check = "whether the engine's queue time accounts for the TTFT, then prompt lengths (prompt_tokens in requests.jsonl) for prefill pressure"
	}
	if eng != nil && eng.Wait.Available {
		ev += ", engine queue wait p95 " + analyze.FormatMs(eng.Wait.P95Ms)
		if eng.Wait.P95Ms >= 0.5*value(b, analyze.Q95) {
			// The engine's own queue time explains most of the TTFT.
			h.Check = "the engine's capacity for this workload (replicas, max_num_seqs, KV-cache): its queue wait accounts for most of the TTFT"
		}
	}
	h.Evidence = ev
	return h, true
}

// saturatedHint: TTFT and TPOT both rose — requests waited for a place
// and the fuller batch decoded each token slower.
func (c *diagCase) saturatedHint(from, to *group, eng *EngineQueue, ev string) (Hint, bool) {
	if eng != nil && eng.Scrapes >= DiagEngineMinScrapes {
		ev += fmt.Sprintf("; the engine's waiting queue peaked at %s", num(eng.WaitingMax))
		if !math.IsNaN(eng.RunningMax) {
			ev += fmt.Sprintf(" and its running batch at %s", num(eng.RunningMax))
		}
		ev += " in " + c.engGroup().noun
		if re := c.engine(from.engine); re != nil && re.Scrapes > 0 && (c.burst || c.phased) {
			ev += fmt.Sprintf(" (%s %s", from.label, num(re.WaitingMax))
			if !math.IsNaN(re.RunningMax) {
				ev += " and " + num(re.RunningMax)
			}
			ev += ")"
		}
	}
	return Hint{
		Hypothesis: "saturation: requests waited before their first token and a fuller batch decoded each token slower",
		Evidence:   ev,
		Check:      "the engine's running batch against its limit (max_num_seqs) and KV-cache use, its queue time, then prompt and output lengths",
	}, true
}

// decodeHint: TTFT steady while completion grew — decoding took longer.
func (c *diagCase) decodeHint(from, to *group, eng *EngineQueue) (Hint, bool) {
	ea, eb := from.s.Latency.E2ESend, to.s.Latency.E2ESend
	ta, tb := from.s.Latency.TTFTSend, to.s.Latency.TTFTSend
	ef, ok := factor(ea, eb, analyze.Q50)
	if !ok || eb.P50Censored || tb.P50Censored || eb.Count < DiagMinSamples || ta.Count < DiagMinSamples {
		return Hint{}, false
	}
	de := eb.P50Ms - ea.P50Ms
	dt := tb.P50Ms - ta.P50Ms
	if ef < DiagCompletionRiseFactor || de < DiagCompletionRiseMinMs || dt > DiagTTFTShareOfRise*de {
		return Hint{}, false
	}
	ev := fmt.Sprintf("completion p50 %s while TTFT p50 moved only %s", move(ea, eb, analyze.Q50, fromTo(from, to)), move(ta, tb, analyze.Q50))
	pf, pok := factor(from.s.Latency.TPOT, to.s.Latency.TPOT, analyze.Q50)
	if pok {
		ev += "; TPOT p50 " + move(from.s.Latency.TPOT, to.s.Latency.TPOT, analyze.Q50)
	}
	oa, ob := perOK(from.s.OutputTokens, from.s.Succeeded), perOK(to.s.OutputTokens, to.s.Succeeded)
	of := math.NaN()
	if oa > 0 && ob > 0 {
		of = ob / oa
		ev += fmt.Sprintf(", output tokens per request %s → %s", num(oa), num(ob))
	}
	if eng != nil && !math.IsNaN(eng.RunningMax) && eng.Scrapes > 0 {
		ev += fmt.Sprintf("; the engine's running batch peaked at %s in %s", num(eng.RunningMax), c.engGroup().noun)
		if re := c.engine(from.engine); re != nil && !math.IsNaN(re.RunningMax) && (c.burst || c.phased) {
			ev += fmt.Sprintf(" (%s %s)", from.label, num(re.RunningMax))
		}
	}
	hyp := "decode contention or longer outputs"
	switch {
	case of >= DiagHoldFactor:
		hyp = "longer outputs: answers grew, so decoding took longer"
	case pok && pf >= DiagHoldFactor:
		hyp = "decode contention: more sequences shared each decode step, so each token came slower"
	}
	return Hint{
		Hypothesis: hyp,
		Evidence:   ev,
		Check:      "the output-token distribution (output_tokens in requests.jsonl), the engine's running batch size and KV-cache use",
	}, true
}

// staleHint: timeouts dominate the failures of the burst or the phase
// after it — the target may still be working on requests nobody waits for.
func (c *diagCase) staleHint() (Hint, bool) {
	gs := []*group{c.engGroup()}
	if c.after != nil {
		gs = append(gs, c.after)
	}
	var parts []string
	for _, g := range gs {
		s := g.s
		if s.TimeoutRate >= DiagStaleTimeoutShare && s.TimeoutRate >= s.FailureRate/2 {
			parts = append(parts, fmt.Sprintf("%s of %s's arrivals timed out", pct(s.TimeoutRate), g.noun))
		}
	}
	if len(parts) == 0 {
		return Hint{}, false
	}
	ev := strings.Join(parts, ", ")
	if t := c.r.Settings.TimeoutMs; t > 0 {
		ev += " (timeout " + analyze.FormatMs(t) + ")"
	}
	// The drain's speed against the fluid model's says whether stale work
	// slowed it: a recovery faster than predicted means the timed-out
	// requests left the queue (a server that aborts on disconnect, as the
	// simulator does) — the opposite of stale work.
	rec, pr := c.v.Recovery, c.in.Capacity.PredictedRecoveryMs
	if c.burst && rec.Recovered && pr > 0 && !math.IsInf(pr, 0) {
		ev += fmt.Sprintf("; %s against %s predicted", recoveredText(rec.RecoveryTimeMs), analyze.FormatMs(pr))
		if rec.RecoveryTimeMs < pr {
			if len(c.served()) > 0 {
				ev += " (replicas were also added)"
			}
			return Hint{
				Hypothesis: "timeouts shortened the recovery: requests gave up and left the queue, so the backlog drained faster than the fluid model predicts",
				Evidence:   ev,
				Check:      "that the server aborts a request when the client disconnects (the engine's running/waiting dropping at the timeouts); those requests were lost, not served — an admission limit (429) would tell the clients sooner",
			}, true
		}
	}
	return Hint{
		Hypothesis: "the target kept working on requests the client had given up on (stale work), which slows the drain",
		Evidence:   ev,
		Check:      "whether the server aborts a request when the client disconnects, and the engine's running/waiting after the timeouts; an admission limit (429) sheds load sooner than a timeout",
	}, true
}

// factor is b's quantile / a's, when a has an uncensored value from at
// least DiagMinSamples values and b has a value (a lower bound when
// censored). ok is false otherwise.
func factor(a, b analyze.Dist, q analyze.Quantile) (float64, bool) {
	av, ac := a.Value(q)
	bv, _ := b.Value(q)
	if a.Count < DiagMinSamples || ac || av <= 0 || (b.Count == 0 && !censored(b, q)) {
		return 0, false
	}
	return bv / av, true
}

func censored(d analyze.Dist, q analyze.Quantile) bool { _, c := d.Value(q); return c }

func value(d analyze.Dist, q analyze.Quantile) float64 { v, _ := d.Value(q); return v }

// rose: the quantile at least doubled and grew by DiagRiseMinMs.
func rose(a, b analyze.Dist, q analyze.Quantile) bool {
	f, ok := factor(a, b, q)
	return ok && f >= DiagRiseFactor && value(b, q)-value(a, q) >= DiagRiseMinMs
}

// move formats a change: "343ms → 2.73s (8×)", "343ms → > 60s (≥ 175×)";
// where, when given, joins the factor: "343ms → 2.73s (8×, baseline → burst)".
func move(a, b analyze.Dist, q analyze.Quantile, where ...string) string {
	s := a.Text(q) + " → " + b.Text(q)
	var in []string
	if f, ok := factor(a, b, q); ok {
		ge := ""
		if censored(b, q) {
			ge = "≥ "
		}
		in = append(in, ge+times(f))
	}
	in = append(in, where...)
	if len(in) > 0 {
		s += " (" + strings.Join(in, ", ") + ")"
	}
	return s
}

func times(f float64) string {
	if f >= 10 {
		return strconv.FormatFloat(f, 'f', 0, 64) + "×"
	}
	return trimZeros(strconv.FormatFloat(f, 'f', 2, 64)) + "×"
}

func fromTo(a, b *group) string { return a.label + " → " + b.label }

func perOK(n, ok int64) float64 {
	if ok == 0 {
		return 0
	}
	return float64(n) / float64(ok)
}

// num formats a rate or count with three significant digits at most.
func num(v float64) string {
	switch {
	case math.IsNaN(v):
		return "n/a"
	case math.Abs(v) >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case math.Abs(v) >= 10:
		return trimZeros(strconv.FormatFloat(v, 'f', 1, 64))
	}
	return trimZeros(strconv.FormatFloat(v, 'f', 2, 64))
}

// recoveredText is a measured recovery: "recovered 90s after the burst",
// "recovered from the first window after the burst".
func recoveredText(ms float64) string {
	if ms == 0 {
		return "recovered from the first window after the burst"
	}
	return "recovered " + analyze.FormatMs(ms) + " after the burst"
}

// scanRecords reads recs once into a DiagTally (a file that fails to read
// was reported by the analysis: what was read counts).
func scanRecords(recs record.Source, doneFrom int64) *analyze.DiagTally {
	t := analyze.NewDiagTally(doneFrom)
	_ = recs.Each(func(rc *record.Record) error { t.Add(rc); return nil })
	return t
}

// cause finds a cause of the judged group's failures that no load
// explains, when it is at least DiagCauseShare of the arrivals (or
// answers past max_tokens are DiagIgnoredShare of the successes): its
// mode, the summary counting every failure by cause, and what to check.
// Server errors are not among them: the failing mode weighs them.
func (c *diagCase) cause() (mode, summary string, hint Hint, ok bool) {
	st := c.stress.s
	top, n := analyze.FaultNone, int64(0)
	for _, f := range analyze.Faults {
		if f == analyze.FaultNoResponse && st.Succeeded > 0 {
			continue // something answered: waiting for headers can be load
		}
		if _, isCause := causeModes[f]; isCause && c.faults[f] > n {
			top, n = f, c.faults[f]
		}
	}
	ignored := st.Client.MaxTokensIgnored
	switch {
	case top != analyze.FaultNone && ratio(n, st.Offered) >= DiagCauseShare:
	case ignored > 0 && ratio(ignored, st.Succeeded) >= DiagIgnoredShare:
		top = analyze.FaultProtocol
	default:
		return "", "", Hint{}, false
	}
	sum := c.causeSummary()
	h := causeHint(top, c.seen.Detail(top))
	if top == analyze.FaultQuota {
		if text, _, ok := Binding(&st.Client.RateLimit, c.startMs()); ok {
			h.Evidence += "; " + text
		}
	}
	if top == analyze.FaultProtocol && c.faults[top] == 0 {
		h.Evidence = sum // only answers past max_tokens: say how many
	}
	return causeModes[top], sum, h, true
}

// startMs is when the judged group began, ms since the run began: its
// first phase's start (0 for a group of no phase).
func (c *diagCase) startMs() float64 {
	for _, p := range c.r.Phases {
		if slices.Contains(c.stress.phases, p.Name) {
			return p.StartMs
		}
	}
	return 0
}

// causeSummary counts every failure of the judged group by cause, the
// most common first, and the answers that ran past max_tokens: "40 of
// 40 arrivals failed: target unreachable 40 (connection refused)".
func (c *diagCase) causeSummary() string {
	st := c.stress.s
	type part struct {
		f analyze.Fault
		n int64
	}
	var parts []part
	for _, f := range analyze.Faults {
		if n := c.faults[f]; n > 0 {
			parts = append(parts, part{f, n})
		}
	}
	slices.SortStableFunc(parts, func(a, b part) int { return cmp.Compare(b.n, a.n) })
	var words []string
	for _, p := range parts {
		w := fmt.Sprintf("%s %d", p.f.Text(), p.n)
		if d := c.seen.Detail(p.f); d != "" {
			w += " (" + d + ")"
		}
		words = append(words, w)
	}
	var s string
	if len(words) > 0 {
		s = fmt.Sprintf("%d of %d arrivals in %s failed: %s", c.faults.Failed(), st.Offered, c.stress.noun, strings.Join(words, ", "))
	}
	if ig := st.Client.MaxTokensIgnored; ig > 0 {
		s = strings.TrimPrefix(s+fmt.Sprintf("; %d of %d successful answers in %s ran past their max_tokens", ig, st.Client.MaxTokensChecked, c.stress.noun), "; ")
	}
	return s
}

// UnusableDiagnosis is the diagnosis of a run stopped early against an
// unusable target (Unusable): why, and what to check for its most
// common cause among faults (the run's failures by cause, tally's error
// classes naming it).
func UnusableDiagnosis(scope, why string, faults analyze.FaultCounts, tally *analyze.DiagTally) Diagnosis {
	d := Diagnosis{Scope: scope, Mode: ModeUnusable, Summary: why}
	if f, _ := faults.Top(); f != analyze.FaultNone {
		detail := ""
		if tally != nil {
			detail = tally.Detail(f)
		}
		d.Hints = []Hint{causeHint(f, detail)}
	}
	return d
}

// causeHint is what to check for a cause that no load explains.
func causeHint(f analyze.Fault, detail string) Hint {
	ev := f.Text()
	if detail != "" {
		ev += ": " + detail
	}
	switch f {
	case analyze.FaultUnreachable:
		return Hint{Hypothesis: "nothing answers at the target: the server is down, or the URL, port, DNS name or TLS setup is wrong", Evidence: ev,
			Check: "that the server is running and listening on the --target host and port (curl it); for https, its certificate (--ca-cert)"}
	case analyze.FaultNoResponse:
		return Hint{Hypothesis: "the target accepts connections but never answers: a hung server, or a port that is not the inference server's", Evidence: ev,
			Check: "the --target port, and whether the server is alive (its health endpoint, its log)"}
	case analyze.FaultUnauthorized:
		return Hint{Hypothesis: "the target refuses the key", Evidence: ev,
			Check: "the API key (OPENAI_API_KEY, or the variable --api-key-env names) and its access to --model"}
	case analyze.FaultNotInference:
		return Hint{Hypothesis: "the target is not an OpenAI-compatible inference API at this URL", Evidence: ev,
			Check: "that --target is the API's base URL ending in /v1 (not a web page or a gateway's root), --model, and --api"}
	case analyze.FaultBadRequest:
		return Hint{Hypothesis: "the target refuses these requests as invalid: the workload or the configuration, not the load", Evidence: ev,
			Check: "the server's log for the reason; prompt + max_tokens against the model's context length (shorten --prompt-tokens or --output-tokens)"}
	case analyze.FaultQuota:
		return Hint{Hypothesis: "a quota of the account bounds the requests: the test measured the quota, not the engine", Evidence: ev,
			Check: "the x-ratelimit-* headers (remaining and reset per bucket) and the account's limits; a dedicated key with higher limits"}
	}
	return Hint{Hypothesis: "the target breaks the protocol: streams cut or malformed, or answers that run past max_tokens", Evidence: ev,
		Check: "the server's handling of stream=true and max_tokens (surge check runs the protocol checks one by one)"}
}
