package analyze

import (
	"fmt"
	"strings"
	"time"
)

// What the load generator must achieve for a run to be judged on the
// target (docs/method.md §2); below these it is the generator that could not keep
// up. See GeneratorCheck.
const (
	GeneratorMinSendRatio = 0.95                   // achieved send rate ≥ 95% of the scheduled rate
	GeneratorMaxLagP99    = 100 * time.Millisecond // schedule lag p99 at most this
	GeneratorMinSamples   = 20                     // fewer sends say nothing about rates: not judged
)

// lagNoteThreshold is the schedule lag above which LagNote mentions it.
const lagNoteThreshold = 10 * time.Millisecond

// Generator is the verdict of GeneratorCheck on whether the load generator
// kept its schedule. Its JSON names are those of the experiment's Measure
// ("measure" in capacity.json and sweep.json), so it can be embedded there
// without changing those files.
type Generator struct {
	ScheduledRPS float64 `json:"scheduled_rps"`     // requests/s; 0 when not measurable (closed loop, too few sends)
	AchievedRPS  float64 `json:"achieved_send_rps"` // requests/s actually sent; 0 when not measurable
	LagP99Ms     float64 `json:"lag_p99_ms"`        // the schedule-lag p99 judged (ms)
	Behind       bool    `json:"generator_limited"` // the generator fell behind: the run describes surge on this machine, not the target
	Note         string  `json:"generator_note,omitempty"`
}

// GeneratorCheck is surge's one verdict on whether the load generator fell
// behind its schedule in a phase. sched[i] and sent[i] are the scheduled
// and sent times (ns) of the phase's i-th sent request, in any order;
// lagP99Ms is the phase's schedule-lag p99 (sent − scheduled, ms). Over the
// n sent requests,
//
//	scheduled rate = (n − 1) / (max sched − min sched)   (requests/s)
//	achieved rate  = (n − 1) / (max sent − min sent)     (requests/s)
//
// and the generator is Behind when
//
//	achieved rate < GeneratorMinSendRatio × scheduled rate   (sent < 95% of the schedule)
//	or lagP99Ms > GeneratorMaxLagP99                         (lag p99 > 100 ms)
//
// Nothing is judged — Behind false, both rates 0, even with a large lag —
// when n < GeneratorMinSamples (20), when either span is 0, or when sched
// and sent differ in length. When Behind, Note says why in one sentence for
// people ("the load generator could not keep its schedule: …").
func GeneratorCheck(sched, sent []int64, lagP99Ms float64) Generator {
	var sp GeneratorSpan
	if len(sched) != len(sent) {
		return Generator{LagP99Ms: lagP99Ms}
	}
	for i := range sent {
		sp.Add(sched[i], sent[i])
	}
	return sp.Check(lagP99Ms)
}

// GeneratorSpan accumulates what GeneratorCheck needs of the sends, one
// at a time (Add): their count and the first and last scheduled and sent
// times.
type GeneratorSpan struct {
	n                int
	schedLo, schedHi int64
	sentLo, sentHi   int64
}

// Add accounts one send scheduled at sched and sent at sent (ns).
func (sp *GeneratorSpan) Add(sched, sent int64) {
	if sp.n == 0 {
		sp.schedLo, sp.schedHi, sp.sentLo, sp.sentHi = sched, sched, sent, sent
	}
	sp.n++
	sp.schedLo, sp.schedHi = min(sp.schedLo, sched), max(sp.schedHi, sched)
	sp.sentLo, sp.sentHi = min(sp.sentLo, sent), max(sp.sentHi, sent)
}

// Merge adds o's sends to sp.
func (sp *GeneratorSpan) Merge(o GeneratorSpan) {
	if o.n == 0 {
		return
	}
	if sp.n == 0 {
		*sp = o
		return
	}
	sp.n += o.n
	sp.schedLo, sp.schedHi = min(sp.schedLo, o.schedLo), max(sp.schedHi, o.schedHi)
	sp.sentLo, sp.sentHi = min(sp.sentLo, o.sentLo), max(sp.sentHi, o.sentHi)
}

// Check is GeneratorCheck of the sends added.
func (sp *GeneratorSpan) Check(lagP99Ms float64) Generator {
	g := Generator{LagP99Ms: lagP99Ms}
	if sp.n < GeneratorMinSamples {
		return g
	}
	ss, sn := float64(sp.schedHi-sp.schedLo)/1e9, float64(sp.sentHi-sp.sentLo)/1e9
	if ss <= 0 || sn <= 0 {
		return g
	}
	n := float64(sp.n - 1)
	g.ScheduledRPS, g.AchievedRPS = n/ss, n/sn
	var why []string
	if g.AchievedRPS < GeneratorMinSendRatio*g.ScheduledRPS {
		why = append(why, fmt.Sprintf("it sent %.2f req/s of the %.2f scheduled (%.0f%%)", g.AchievedRPS, g.ScheduledRPS, 100*g.AchievedRPS/g.ScheduledRPS))
	}
	if g.LagP99Ms > float64(GeneratorMaxLagP99)/float64(time.Millisecond) {
		why = append(why, "schedule lag p99 "+FormatMs(g.LagP99Ms))
	}
	if len(why) > 0 {
		g.Behind = true
		g.Note = "the load generator could not keep its schedule: " + strings.Join(why, ", ") +
			". This is surge's limit on this machine, not the target's"
	}
	return g
}

// LagNote is an informational line for the console about a schedule-lag
// distribution (sent − scheduled) that stays within GeneratorCheck's
// limits; it is not a verdict, and callers print it only when the
// generator is not Behind (the verdict's Note then says more). It is ""
// without samples or when the lag p99 is at most lagNoteThreshold (10 ms);
// otherwise it reports occasional spikes when the p95 is within the
// threshold, and a sustained lag when the p95 is above it too.
func LagNote(lag Dist) string {
	limit := float64(lagNoteThreshold) / float64(time.Millisecond)
	switch {
	case lag.Count == 0 || lag.P99Ms <= limit:
		return ""
	case lag.P95Ms <= limit:
		return fmt.Sprintf("note: occasional schedule lag spikes (p99 %s, max %s) though the generator mostly kept its schedule (p95 %s); is the machine busy?",
			lag.Text(Q99), FormatMs(lag.MaxMs), lag.Text(Q95))
	}
	return fmt.Sprintf("note: the generator lagged its schedule (p95 %s, p99 %s, max %s); rates and TTFT-from-schedule include this lag. Is the machine busy?",
		lag.Text(Q95), lag.Text(Q99), FormatMs(lag.MaxMs))
}

// N is the number of sends added.
func (sp *GeneratorSpan) N() int { return sp.n }
