package virtual

import (
	"cmp"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/schedule"
	"github.com/surge-bench/surge/internal/sim"
	"github.com/surge-bench/surge/internal/workload"
)

// fixedGen returns a generator whose every request has prompt tokens and
// asks for exactly output tokens (ignore_eos).
func fixedGen(t *testing.T, prompt, output int) *workload.Generator {
	t.Helper()
	p := workload.Profile{Name: "fixed", Prompt: workload.Fixed(prompt), Output: workload.Fixed(output), MaxTokens: output}
	g, err := workload.New(workload.Config{Profile: p, Seed: 1, IgnoreEOS: true})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// chatGen returns a generator of the default chat profile (lengths vary).
func chatGen(t *testing.T, seed int64) *workload.Generator {
	t.Helper()
	p, err := workload.Lookup("chat")
	if err != nil {
		t.Fatal(err)
	}
	g, err := workload.New(workload.Config{Profile: p, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// constant returns the arrivals of one constant-rate phase.
func constant(t *testing.T, phase string, rate float64, d time.Duration) []schedule.Arrival {
	t.Helper()
	a, err := schedule.Build(schedule.Plan{Phases: []schedule.Phase{{Name: phase, Duration: d, Rate: rate, Arrival: schedule.ArrivalConstant}}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// baseConfig is the default engine model with a generous timeout, 1 s
// samples and deadlines that every request below capacity meets.
func baseConfig() Config {
	return Config{
		Sim:            sim.DefaultConfig(),
		Timeout:        time.Minute,
		ScrapeInterval: time.Second,
		Deadlines:      analyze.Deadlines{TTFT: 10 * time.Second, E2E: 30 * time.Second},
		Run:            "run",
		Profile:        "fixed",
	}
}

// inFlight returns the largest number of requests in flight at any instant,
// from the records' send and done times. A request counts over [sent, done):
// at equal times ends come before sends, as a user's next request is sent
// at the instant its last one ended.
func inFlight(recs []record.Record) int {
	type ev struct {
		t     int64
		delta int
	}
	evs := make([]ev, 0, 2*len(recs))
	for _, r := range recs {
		evs = append(evs, ev{r.SentNs, +1}, ev{r.DoneNs, -1})
	}
	sort.Slice(evs, func(i, j int) bool { return evs[i].t < evs[j].t || evs[i].t == evs[j].t && evs[i].delta < evs[j].delta })
	n, peak := 0, 0
	for _, e := range evs {
		n += e.delta
		peak = max(peak, n)
	}
	return peak
}

// stopFunc is a Stopper that notes every question it is asked.
type stopFunc struct {
	from  time.Duration
	stop  func(call int, recs []record.Record, horizon time.Duration) string
	calls []stopCall
	seen  []record.Record // every record given so far (Add)
}

// stopCall is one question asked of a stopFunc.
type stopCall struct {
	recs    []record.Record
	horizon time.Duration
}

func (s *stopFunc) CheckFrom() time.Duration { return s.from }

func (s *stopFunc) Add(r *record.Record) { s.seen = append(s.seen, *r) }

func (s *stopFunc) Stop(horizon time.Duration) string {
	recs := slices.Clone(s.seen)
	slices.SortFunc(recs, func(a, b record.Record) int { return cmp.Compare(a.Seq, b.Seq) })
	s.calls = append(s.calls, stopCall{recs, horizon})
	if s.stop == nil {
		return ""
	}
	return s.stop(len(s.calls), recs, horizon)
}
