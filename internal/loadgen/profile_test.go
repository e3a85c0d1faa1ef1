package loadgen

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/schedule"
	"github.com/surge-bench/surge/internal/workload"
)

// An arrival dropped by the in-flight cap is never built, yet carries the
// profile it would have had (ProfileOf); a sent request carries its own.
func TestDropsCarryTheirProfile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		origin := time.Now()
		var c collector
		profileOf := func(a *schedule.Arrival) string { return [...]string{"chat", "rag"}[a.Seq%2] }
		labelled := func(a *schedule.Arrival) workload.Request {
			return workload.Request{Seq: a.Seq, MaxTokens: 8, Profile: profileOf(a)}
		}
		o := NewOpen(Config{MaxInFlight: 3, Profile: "default", ProfileOf: profileOf}, origin, &fakeTarget{origin, time.Hour}, labelled, c.sink)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = o.Run(ctx, constant(12, 100*time.Millisecond))
		drops := 0
		for _, r := range c.recs {
			if r.Outcome == record.GeneratorDrop {
				drops++
			}
			if want := profileOf(&schedule.Arrival{Seq: r.Seq}); r.Profile != want {
				t.Errorf("seq %d (%s): profile %q, want %q", r.Seq, r.Outcome, r.Profile, want)
			}
		}
		if drops != 9 {
			t.Fatalf("drops %d, want 9", drops)
		}
	})
}
