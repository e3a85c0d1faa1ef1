package experiment

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/loadgen"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/schedule"
	"github.com/surge-bench/surge/internal/scrape"
	"github.com/surge-bench/surge/internal/sim"
	"github.com/surge-bench/surge/internal/workload"
)

// executeVirtual runs the arrivals through the engine model in virtual time
// and converts each outcome into the Record the HTTP client would have
// written. The client side is ideal here (no schedule lag, no connection
// wait), so everything measured is the engine's doing.
func (e *Env) executeVirtual(ctx context.Context, spec Spec, arrivals []schedule.Arrival, wcfg workload.Config, sink loadgen.Sink, res *Result) error {
	o := &e.Opts
	cl, err := sim.NewCluster(o.Sim)
	if err != nil {
		return &ConfigError{err}
	}
	gen, err := workload.New(wcfg)
	if err != nil {
		return &ConfigError{err}
	}
	in := make([]sim.Arrival, len(arrivals))
	maxTok := make([]int, len(arrivals))
	for i := range arrivals {
		r := gen.Generate(arrivals[i])
		in[i] = sim.Arrival{At: arrivals[i].At, Req: sim.Request{PromptTokens: r.PromptTokens, MaxTokens: r.MaxTokens, IgnoreEOS: r.IgnoreEOS}}
		maxTok[i] = r.MaxTokens
	}
	var samples []scrape.Sample
	onSample := func(t time.Duration, s sim.Snapshot) {
		samples = append(samples, simSample(t, s))
	}
	outs := sim.Simulate(cl, in, o.Timeout, o.ScrapeInterval, onSample)
	d := o.deadlines()
	recs := make([]record.Record, len(outs))
	for i := range outs {
		recs[i] = virtualRecord(spec.Name, o.Profile, &arrivals[i], &outs[i], maxTok[i], o.Timeout)
		recs[i].Good = analyze.Judge(&recs[i], d)
	}
	if spec.StopWhen != nil && spec.StopInVirtualTime {
		if at, ok := virtualStopAt(spec, arrivals, outs, recs); ok {
			// Arrivals from the stop on are never sent: simulate the run again
			// without them (the engine then has less work after the stop).
			n := sort.Search(len(arrivals), func(i int) bool { return arrivals[i].At >= at })
			if cl, err = sim.NewCluster(o.Sim); err != nil {
				return &ConfigError{err}
			}
			arrivals, in, samples = arrivals[:n], in[:n], nil
			outs = sim.Simulate(cl, in, o.Timeout, o.ScrapeInterval, onSample)
			recs = recs[:n]
			for i := range outs {
				recs[i] = virtualRecord(spec.Name, o.Profile, &arrivals[i], &outs[i], maxTok[i], o.Timeout)
				recs[i].Good = analyze.Judge(&recs[i], d)
			}
			res.StoppedAt = at
		}
	}
	res.Engine, res.SimEvents = samples, cl.Events()
	res.EngineQ = virtualQueueStats(spec.Plan.Bounds(), arrivals, outs)
	for i := range recs {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		sink(&recs[i])
	}
	return nil
}

// simSample turns a simulator snapshot into an engine sample, as if scraped.
func simSample(t time.Duration, s sim.Snapshot) scrape.Sample {
	x := scrape.EmptySample(int64(t))
	x.Has = 0
	for _, m := range []scrape.Metric{scrape.Waiting, scrape.Running, scrape.KVUsage, scrape.Replicas, scrape.PromptTokens, scrape.GenerationTokens, scrape.Success} {
		x.Has = x.Has.With(m)
	}
	x.Waiting, x.Running, x.KVUsage = float64(s.Waiting), float64(s.Running), s.KVUsage
	x.Replicas = float64(s.ReadyReplicas)
	x.PromptTokens, x.GenerationTokens, x.Success = float64(s.PromptTokens), float64(s.GenerationTokens), float64(s.Finished)
	return x
}

func virtualRecord(run, profile string, a *schedule.Arrival, out *sim.Outcome, maxTokens int, timeout time.Duration) record.Record {
	rec := record.New(run+"-"+strconv.FormatInt(a.Seq, 10), a.Seq, a.Phase, int64(a.At))
	rec.Profile, rec.MaxTokens, rec.Attempts = profile, maxTokens, 1
	rec.SentNs, rec.ConnNs = int64(a.At), int64(a.At)
	rec.Replica = "r" + strconv.Itoa(out.Ticket.Replica)
	at := func(d time.Duration) int64 {
		if d == sim.Never {
			return record.None
		}
		return int64(d)
	}
	rec.DoneNs = at(out.DoneAt)
	switch {
	case out.Rejected:
		rec.Status, rec.Outcome, rec.Error = 429, record.RateLimited, "status 429"
		rec.HeadersNs = rec.DoneNs
		rec.RetryAfterNs = int64(out.RetryAfter)
		return rec
	case out.Failed:
		rec.Status, rec.Outcome, rec.Error = out.Status, record.HTTPError, "status "+strconv.Itoa(out.Status)
		rec.HeadersNs = rec.DoneNs
		return rec
	}
	rec.Status = out.Status
	if out.Status != 0 {
		rec.HeadersNs = int64(a.At)
	}
	rec.FirstTokenNs = at(out.FirstTokenAt)
	rec.FirstChunkNs = rec.FirstTokenNs
	rec.OutputTokens, rec.PromptTokens, rec.Chunks = out.OutputTokens, out.PromptTokens, out.OutputTokens
	switch {
	case out.TimedOut:
		rec.Outcome, rec.Error = record.Timeout, "timeout after "+timeout.String()
		rec.DoneNs = int64(a.At + timeout)
		return rec
	case out.StreamFailed:
		rec.Outcome, rec.Error = record.StreamError, "stream broken (injected fault)"
		return rec
	}
	rec.Outcome, rec.UsageFromServer = record.OK, true
	if out.OutputTokens >= 2 {
		rec.ITLMaxNs = int64(out.MaxGap)
		rec.TPOTNs = (rec.DoneNs - rec.FirstTokenNs) / int64(out.OutputTokens-1)
	}
	return rec
}

// virtualQueueStats computes the engine queue wait per phase exactly from
// the engine's own admission times (the model knows them; no histogram
// buckets needed).
func virtualQueueStats(bounds []schedule.PhaseBounds, arrivals []schedule.Arrival, outs []sim.Outcome) map[string]scrape.Stats {
	byPhase := map[string][]float64{}
	for i := range outs {
		if outs[i].AdmittedAt == sim.Never {
			continue
		}
		byPhase[arrivals[i].Phase] = append(byPhase[arrivals[i].Phase], (outs[i].AdmittedAt - outs[i].ScheduledAt).Seconds())
	}
	m := map[string]scrape.Stats{}
	for _, b := range bounds {
		v := byPhase[b.Name]
		st := scrape.Stats{Metric: scrape.QueueTime, FromNs: int64(b.Start), ToNs: int64(b.End), Count: float64(len(v)), Mean: math.NaN()}
		if len(v) == 0 {
			st.Reason = "no observations"
			st.P50, st.P95, st.P99 = scrape.Estimate{Value: math.NaN()}, scrape.Estimate{Value: math.NaN()}, scrape.Estimate{Value: math.NaN()}
			m[b.Name] = st
			continue
		}
		sort.Float64s(v)
		sum := 0.0
		for _, x := range v {
			sum += x
		}
		st.Mean = sum / float64(len(v))
		q := func(p float64) scrape.Estimate {
			k := int(math.Ceil(p*float64(len(v)))) - 1
			return scrape.Estimate{Value: v[max(0, min(k, len(v)-1))]}
		}
		st.P50, st.P95, st.P99 = q(0.50), q(0.95), q(0.99)
		m[b.Name] = st
	}
	return m
}

func writeEngineCSV(path string, samples []scrape.Sample) error {
	f, err := os.Create(filepath.Clean(path))
	if err != nil {
		return err
	}
	w := scrape.NewCSVWriter(f)
	for _, s := range samples {
		if err := w.Write(s); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}
