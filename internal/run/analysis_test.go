package run

import (
	"context"
	"encoding/json"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/schedule"
)

// burstPlan is a small burst: warmup, baseline, a 3× burst, recovery.
func burstPlan(rate float64) schedule.Plan {
	return schedule.Plan{Phases: []schedule.Phase{
		{Name: schedule.PhaseWarmup, Duration: 5 * time.Second, Rate: rate, Arrival: schedule.ArrivalPoisson},
		{Name: schedule.PhaseBaseline, Duration: 20 * time.Second, Rate: rate, Arrival: schedule.ArrivalPoisson},
		{Name: schedule.PhaseBurst, Duration: 10 * time.Second, Rate: 3 * rate, Arrival: schedule.ArrivalPoisson},
		{Name: schedule.PhaseRecovery, Duration: 30 * time.Second, Rate: rate, Arrival: schedule.ArrivalPoisson},
	}}
}

// sameAnalysis fails unless the run's own result and `surge report`'s
// re-analysis of its folder (Reload, Result) say the same: the analysis as
// results.json holds it, the record count, the sessions.
func sameAnalysis(t *testing.T, res *Result, rule analyze.RecoveryRule) {
	t.Helper()
	re, err := Reload(res.Spec.Dir.Path())
	if err != nil {
		t.Fatal(err)
	}
	again, err := re.Result(res.Spec.Dir, rule)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(res.Analysis)
	b, _ := json.Marshal(again.Analysis)
	if string(a) != string(b) {
		t.Errorf("the re-analysis differs from the run's own:\nrun    %.600s\nreport %.600s", a, b)
	}
	if res.Count() != again.Count() || res.Count() == 0 {
		t.Errorf("%d records in the run, %d re-read", res.Count(), again.Count())
	}
}

// `surge report` on a run folder gives the run's own analysis, number for
// number: a live run (its requests.jsonl in completion order) and a
// virtual one (in schedule order), with a burst and a recovery rule.
func TestReportEqualsRun(t *testing.T) {
	rule := analyze.RecoveryRule{Window: 3 * time.Second, Consecutive: 2}
	exclude := []string{schedule.PhaseWarmup}
	t.Run("virtual", func(t *testing.T) {
		o := quietOptions()
		env, err := Prepare(context.Background(), o, true, nil, nil, "test")
		if err != nil {
			t.Fatal(err)
		}
		defer env.Close()
		res, err := env.Execute(context.Background(), Spec{Name: "r", Dir: testDir(t), Command: "test", Plan: burstPlan(4), Exclude: exclude, Recovery: rule})
		if err != nil {
			t.Fatal(err)
		}
		sameAnalysis(t, res, rule)
	})
	t.Run("live", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			env := bubbleEnv(t, quietOptions(), nil)
			res, err := env.Execute(context.Background(), Spec{Name: "r", Dir: testDir(t), Command: "test", Plan: burstPlan(2), Exclude: exclude, Recovery: rule})
			if err != nil {
				t.Fatal(err)
			}
			sameAnalysis(t, res, rule)
			sameSends(t, res)
		})
	})
	t.Run("sessions", func(t *testing.T) {
		o := sessionOptions("3", time.Second)
		o.Quiet = true
		env, err := Prepare(context.Background(), o, true, nil, nil, "test")
		if err != nil {
			t.Fatal(err)
		}
		defer env.Close()
		res, err := env.Execute(context.Background(), Spec{Name: "r", Dir: testDir(t), Command: "test", Plan: onePhase(1, 20*time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		if res.Analysis.Sessions == nil || res.Analysis.Sessions.Sessions == 0 {
			t.Fatalf("no sessions analysed: %+v", res.Analysis.Sessions)
		}
		sameAnalysis(t, res, analyze.RecoveryRule{})
	})
}

// sameSends: the sends' spans the analysis pass gathered are those a pass
// over the records finds, for every send and for whole phases; a range
// that cuts a phase is not answered.
func sameSends(t *testing.T, res *Result) {
	t.Helper()
	recs := recordsOf(t, res)
	b := res.Plan.Bounds()
	for _, c := range []struct{ from, to int64 }{{0, math.MaxInt64}, {int64(b[2].Start), int64(b[2].End)}, {int64(b[1].Start), int64(b[3].End)}} {
		var want analyze.GeneratorSpan
		for _, r := range recs {
			if r.Sent() && r.ScheduledNs >= c.from && r.ScheduledNs < c.to {
				want.Add(r.ScheduledNs, r.SentNs)
			}
		}
		if got, ok := res.Sends.In(c.from, c.to); !ok || got != want || want == (analyze.GeneratorSpan{}) {
			t.Errorf("sends in [%d, %d): %+v (ok %v), a pass finds %+v", c.from, c.to, got, ok, want)
		}
	}
	if _, ok := res.Sends.In(int64(b[2].Start)+1, int64(b[2].End)); ok {
		t.Error("a range cutting a phase was answered")
	}
}
