package run

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/judge"
	"github.com/surge-bench/surge/internal/rundir"
)

// A live run reports what surge observed of itself: its sends and their
// lag (exactly on schedule in virtual time), the rate per phase, the most
// requests in flight (constant arrivals every 250 ms, each answered in
// seconds: several at once), its CPU, and the verdict; summary.json keeps
// the section and a re-render reads it back.
func TestSelfAccuracySection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := bubbleEnv(t, quietOptions(), nil)
		d := testDir(t)
		res, err := env.Execute(context.Background(), Spec{Name: "r", Dir: d, Command: "test", Plan: onePhase(4, 10*time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		s := res.SelfAccuracy
		if s == nil {
			t.Fatal("no self-accuracy section")
		}
		// The verdict is not asserted beyond "not behind": the machine's
		// CPU pressure and the goroutines' waits are real even in the
		// bubble (a busy CI machine may make it at risk).
		if s.State == judge.SelfBehind || s.State == judge.SelfNotJudged || s.Sends != 40 || s.LagP99Ms != 0 || s.PeakInFlight < 2 || s.PeakInFlight > 40 ||
			len(s.Phases) != 1 || s.Phases[0].Name != "main" || s.Phases[0].Sends != 40 || s.Phases[0].AchievedRPS != s.Phases[0].ScheduledRPS ||
			!s.InProcess || s.CoresAvailable < 1 || s.CPUSeconds < 0 {
			t.Errorf("section %+v", s)
		}
		var sum rundir.Summary
		b, err := os.ReadFile(filepath.Join(d.Path(), "summary.json"))
		if err == nil {
			err = json.Unmarshal(b, &sum)
		}
		if err != nil || sum.SelfAccuracy == nil || sum.SelfAccuracy.PeakInFlight != s.PeakInFlight || sum.SelfAccuracy.State != s.State {
			t.Fatalf("summary.json: %v, %+v", err, sum.SelfAccuracy)
		}
		d.Close()
		r, err := Reload(d.Path())
		if err != nil {
			t.Fatal(err)
		}
		d2, err := rundir.Reopen(d.Path(), "test")
		if err != nil {
			t.Fatal(err)
		}
		defer d2.Close()
		again, err := r.Result(d2, analyze.RecoveryRule{})
		if err != nil {
			t.Fatal(err)
		}
		if again.SelfAccuracy == nil || again.SelfAccuracy.Line() != s.Line() {
			t.Errorf("re-rendered section %+v, want %+v", again.SelfAccuracy, s)
		}
	})
}
