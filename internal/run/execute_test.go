package run

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/judge"
	"github.com/surge-bench/surge/internal/memnet"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/rundir"
	"github.com/surge-bench/surge/internal/schedule"
	"github.com/surge-bench/surge/internal/workload"
)

// These tests run whole live runs — the simulator serving HTTP, the
// client streaming, the scraper, the stop checks — inside a
// testing/synctest bubble over an in-memory network: time is virtual, so
// every moment asserted is exact and no test sleeps.

// bubbleEnv prepares the in-process simulator on an in-memory network.
func bubbleEnv(t *testing.T, o Options, view *strings.Builder) *Env {
	t.Helper()
	su := Setup{Version: "test", Network: &memnet.Network{}}
	if view != nil {
		su.View = view
	}
	env, err := PrepareWith(context.Background(), o, false, su)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Close() })
	return env
}

func testDir(t *testing.T) *rundir.Dir {
	t.Helper()
	d, err := rundir.Create(filepath.Join(t.TempDir(), "run"), rundir.Options{Owner: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func quietOptions() Options {
	o := DefaultOptions()
	o.Quiet = true
	return o
}

func onePhase(rate float64, d time.Duration) schedule.Plan {
	return schedule.Plan{Phases: []schedule.Phase{{Name: "main", Duration: d, Rate: rate, Arrival: schedule.ArrivalConstant}}}
}

// A live run in virtual time: one record per arrival, all successful,
// sent exactly on schedule, and the run folder complete.
func TestExecuteLiveInBubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := bubbleEnv(t, quietOptions(), nil)
		d := testDir(t)
		res, err := env.Execute(context.Background(), Spec{Name: "r", Dir: d, Command: "test", Plan: onePhase(4, 10*time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		if res.Count() != 40 || res.Partial {
			t.Fatalf("%d records, partial %v", res.Count(), res.Partial)
		}
		for i, r := range recordsOf(t, res) {
			if r.Seq != int64(i) || r.Outcome != record.OK || r.Lag() != 0 {
				t.Fatalf("record %d: seq %d outcome %s lag %d", i, r.Seq, r.Outcome, r.Lag())
			}
		}
		for _, f := range []string{"manifest.json", "requests.jsonl", "engine.csv", "summary.json", "timeseries.csv"} {
			if st, err := os.Stat(filepath.Join(d.Path(), f)); err != nil || st.Size() == 0 {
				t.Errorf("%s: %v", f, err)
			}
		}
		if !res.Manifest.Finished.After(res.Manifest.Started) || res.Manifest.Partial {
			t.Errorf("manifest: started %s finished %s partial %v", res.Manifest.Started, res.Manifest.Finished, res.Manifest.Partial)
		}
		if qw := res.QueueWait["main"]; !qw.Available {
			t.Errorf("queue wait from the simulator's metrics unavailable: %+v", qw)
		}
	})
}

// stopAt stops the schedule at its third check.
type stopAt struct {
	from  time.Duration
	asked []time.Duration // the horizons it was asked with
	last  int64           // the latest scheduled time given
	given bool
}

func (s *stopAt) CheckFrom() time.Duration { return s.from }
func (s *stopAt) Add(r *record.Record) {
	if r.DoneNs == record.None && r.Outcome != record.GeneratorDrop {
		panic("the stopper was given an unfinished record")
	}
	s.last, s.given = max(s.last, r.ScheduledNs), true
}
func (s *stopAt) Stop(horizon time.Duration) string {
	s.asked = append(s.asked, horizon)
	if s.given && time.Duration(s.last) >= horizon {
		panic("the stopper was given a record past the horizon")
	}
	if len(s.asked) >= 3 {
		return "enough"
	}
	return ""
}

// Early stop: the Stopper is asked once a second from CheckFrom on, sees
// only finished records before the horizon, and when it says stop no
// later arrival is sent and the plan ends at that moment.
func TestExecuteEarlyStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := bubbleEnv(t, quietOptions(), nil)
		stop := &stopAt{from: 4 * time.Second}
		res, err := env.Execute(context.Background(), Spec{Name: "r", Dir: testDir(t), Command: "test", Plan: onePhase(5, time.Minute), Stop: stop})
		if err != nil {
			t.Fatal(err)
		}
		// Asked at 4 s, 5 s and 6 s: it stops at the third. The arrival due
		// at that very instant was sent: the schedule ends before the next.
		if res.StoppedAt != 6200*time.Millisecond || res.StopWhy != "enough" || len(stop.asked) != 3 {
			t.Fatalf("stopped at %s (%q) after %d checks", res.StoppedAt, res.StopWhy, len(stop.asked))
		}
		if got := res.Plan.Duration(); got != res.StoppedAt {
			t.Errorf("plan cut at %s, want %s", got, res.StoppedAt)
		}
		for _, r := range recordsOf(t, res) {
			if time.Duration(r.ScheduledNs) >= res.StoppedAt {
				t.Fatalf("seq %d scheduled at %s, after the stop", r.Seq, time.Duration(r.ScheduledNs))
			}
		}
		if res.Count() != 31 {
			t.Errorf("%d records, want the 31 arrivals scheduled in [0, 6 s] at 5/s", res.Count())
		}
	})
}

// Ctrl-C at 3 s: every arrival due by then has a record (the ones in
// flight cancelled), the run is partial, and its phase ends at 3 s so that
// rates are over the time that ran.
func TestExecuteInterrupted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := quietOptions()
		o.OutputTokens = workload.FixedLength(16) // answers of about half a second: most finish, the last are cut
		env := bubbleEnv(t, o, nil)
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(3*time.Second, cancel)
		res, err := env.Execute(ctx, Spec{Name: "r", Dir: testDir(t), Command: "test", Plan: onePhase(10, time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Partial || !strings.Contains(res.PartialWhy, "interrupted") {
			t.Fatalf("partial %v %q", res.Partial, res.PartialWhy)
		}
		if res.Plan.Duration() != 3100*time.Millisecond {
			t.Errorf("plan cut at %s, want 3.1 s (the arrival due at 3 s was sent)", res.Plan.Duration())
		}
		cancelled := 0
		for i, r := range recordsOf(t, res) {
			if r.Seq != int64(i) {
				t.Fatalf("record %d has seq %d: an arrival lost its record", i, r.Seq)
			}
			if r.Outcome == record.Cancelled {
				cancelled++
			}
		}
		if res.Count() != 31 || cancelled == 0 || cancelled == 31 {
			t.Fatalf("%d records, %d cancelled; want the 31 arrivals of [0, 3 s], those in flight at 3 s cancelled", res.Count(), cancelled)
		}
		if got := res.Analysis.Overall.OfferedRPS; got < 9.99 || got > 10.01 {
			t.Errorf("offered %.3f/s, want 10 over the 3.1 s that ran", got)
		}
		if !res.Manifest.Partial {
			t.Error("manifest not partial")
		}
	})
}

// A configuration error in the plan is found before any file is written.
func TestExecuteConfigErrorWritesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := bubbleEnv(t, quietOptions(), nil)
		d := testDir(t)
		bad := onePhase(-1, time.Second)
		_, err := env.Execute(context.Background(), Spec{Name: "r", Dir: d, Command: "test", Plan: bad})
		var ce *ConfigError
		if !errors.As(err, &ce) {
			t.Fatalf("err %v, want a ConfigError", err)
		}
		if entries, _ := os.ReadDir(d.Path()); len(entries) != 1 { // the lock file
			t.Errorf("files written: %v", entries)
		}
	})
}

// A run whose engine.csv cannot be created stops as a write error that
// names engine.csv, not requests.jsonl, in the error and in the manifest.
func TestExecuteEngineCSVFailureNamesTheFile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := bubbleEnv(t, quietOptions(), nil)
		d := testDir(t)
		if err := os.Mkdir(filepath.Join(d.Path(), "engine.csv"), 0o755); err != nil { // not a file: cannot be created
			t.Fatal(err)
		}
		res, err := env.Execute(context.Background(), Spec{Name: "r", Dir: d, Command: "test", Plan: onePhase(4, 10*time.Second)})
		var we *WriteError
		if !errors.As(err, &we) || !strings.Contains(err.Error(), "engine.csv") || strings.Contains(err.Error(), "requests.jsonl") {
			t.Fatalf("err %v, want a *WriteError naming engine.csv", err)
		}
		if res == nil || !res.Partial || !strings.Contains(res.PartialWhy, "engine.csv") {
			t.Fatalf("result %+v, want partial because of engine.csv", res)
		}
		m, err := record.ReadManifest(filepath.Join(d.Path(), "manifest.json"))
		if err != nil || !m.Partial || !strings.Contains(m.PartialWhy, "engine.csv") {
			t.Fatalf("manifest %+v (%v), want partial naming engine.csv", m, err)
		}
	})
}

// A thinking model: the simulator streams reasoning first; records carry the
// first token of any kind before the first answer text, and the reasoning
// tokens from usage.
func TestExecuteReasoningFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := quietOptions()
		o.Sim.ReasoningTokens = 4
		env := bubbleEnv(t, o, nil)
		res, err := env.Execute(context.Background(), Spec{Name: "r", Dir: testDir(t), Command: "test", Plan: onePhase(2, 5*time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range recordsOf(t, res) {
			if r.Outcome != record.OK || r.ReasoningTokens != 4 || r.FirstTextNs == record.None || r.FirstTextNs <= r.FirstTokenNs {
				t.Fatalf("record %d: %s reasoning %d first token %d first text %d", i, r.Outcome, r.ReasoningTokens, r.FirstTokenNs, r.FirstTextNs)
			}
		}
	})
}

// Ctrl-C during an overloaded burst: the requests cancelled in flight
// rank above every survivor in the percentiles (censored like timeouts),
// so the survivors' TTFT cannot make the burst's TTFT clause PASS. Only
// that clause is checked: goodput would fail on the cancelled anyway.
func TestInterruptedBurstIsNotAPass(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := quietOptions()
		o.SLOTTFTP95, o.SLOE2EP99, o.SLOGoodput = 2*time.Second, 0, 0
		o.OutputTokens = workload.FixedLength(16)
		env := bubbleEnv(t, o, nil)
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(25*time.Second, cancel)
		plan := schedule.Plan{Phases: []schedule.Phase{
			{Name: "baseline", Duration: 20 * time.Second, Rate: 2, Arrival: schedule.ArrivalConstant},
			{Name: "burst", Duration: time.Minute, Rate: 40, Arrival: schedule.ArrivalConstant},
		}}
		res, err := env.Execute(ctx, Spec{Name: "r", Dir: testDir(t), Command: "test", Plan: plan})
		if err != nil {
			t.Fatal(err)
		}
		p, _ := res.Analysis.Phase("burst")
		d := p.Latency.TTFTSchedule
		bv, _ := res.Verdicts.Phase("burst")
		t.Logf("burst: %d offered, %d ok, %d cancelled; TTFT %s; %+v", p.Offered, p.Succeeded, p.Outcomes[record.Cancelled], d, bv.Clauses)
		if p.Outcomes[record.Cancelled] < p.Offered/10 || p.Succeeded == 0 {
			t.Fatalf("the test needs survivors and an overload: %d ok, %d of %d cancelled", p.Succeeded, p.Outcomes[record.Cancelled], p.Offered)
		}
		if !d.P95Censored || bv.Outcome == judge.Pass || res.Verdicts.Overall.Outcome == judge.Pass {
			t.Fatalf("p95 TTFT %s (censored %v), burst %s, overall %s: a PASS from the survivors", d.Text(analyze.Q95), d.P95Censored, bv.Outcome, res.Verdicts.Overall.Outcome)
		}
	})
}

// TestManifestNamesHTTPClient: the manifest says which HTTP client the
// requests went through — what --http-client auto picked for the
// simulator's http:// address (surge's own), or the one asked for.
func TestManifestNamesHTTPClient(t *testing.T) {
	for _, tc := range []struct{ flag, want string }{{"auto", "surge"}, {"go", "go"}, {"surge", "surge"}} {
		t.Run(tc.flag, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				o := quietOptions()
				o.HTTPClient = tc.flag
				env := bubbleEnv(t, o, nil)
				res, err := env.Execute(context.Background(), Spec{Name: "r", Dir: testDir(t), Command: "test", Plan: onePhase(2, 2*time.Second)})
				if err != nil {
					t.Fatal(err)
				}
				if got := res.Manifest.HTTPClient; got != tc.want {
					t.Errorf("--http-client %s: manifest http_client %q, want %q", tc.flag, got, tc.want)
				}
			})
		})
	}
}
