package analyze

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/record"
)

func withProfile(r *record.Record, p string) *record.Record {
	r.Profile = p
	return r
}

// Per-profile results, computed by hand: chat has 4 arrivals (TTFT 100,
// 200, 300, 400 ms; one 500 error), rag 2 (TTFT 1 s and 3 s), in the
// baseline phase of burstPhases; a warmup request of a third profile is
// excluded, as from Overall.
func TestProfilesSplitOverall(t *testing.T) {
	a := mustNew(t, Config{Phases: burstPhases()})
	chat := []*record.Record{
		okRec(11*s, 0, 100*ms, 500*ms), okRec(12*s, 0, 200*ms, 600*ms),
		okRec(13*s, 0, 300*ms, 700*ms), okRec(14*s, 0, 400*ms, 800*ms),
		failRec(15*s, record.HTTPError),
	}
	chat[0].PromptTokens, chat[1].PromptTokens, chat[2].PromptTokens, chat[3].PromptTokens = 100, 300, 200, 400
	for _, r := range chat {
		addAll(a, withProfile(r, "chat"))
	}
	r1, r2 := okRec(20*s, 0, 1*s, 5*s), okRec(21*s, 0, 3*s, 9*s)
	r1.PromptTokens, r2.PromptTokens, r1.OutputTokens, r2.OutputTokens = 3000, 3500, 200, 250
	addAll(a, withProfile(r1, "rag"), withProfile(r2, "rag"), withProfile(okRec(1*s, 0, 50*ms, 90*ms), "warm"))
	res := a.Result()
	if len(res.Profiles) != 2 {
		t.Fatalf("profiles %+v, want chat and rag", res.Profiles)
	}
	c, g := res.Profiles[0], res.Profiles[1]
	if c.Name != "chat" || g.Name != "rag" {
		t.Fatalf("names %q %q", c.Name, g.Name)
	}
	if c.Offered != 5 || c.Succeeded != 4 || !near(c.ErrorRate, 0.2) || !near(c.Share, 5.0/7) {
		t.Errorf("chat: offered %d ok %d error %.3f share %.3f", c.Offered, c.Succeeded, c.ErrorRate, c.Share)
	}
	// Nearest rank over 5 arrivals (the error counts in none of the
	// latency samples): p50 of {100, 200, 300, 400} = rank 2 = 200 ms.
	if l := c.Latency.TTFTSchedule; l.Count != 4 || !hdrNear(l.P50Ms, 200) || !hdrNear(l.P99Ms, 400) {
		t.Errorf("chat TTFT: %+v", l)
	}
	if c.PromptTokensP50 != 200 || c.OutputTokensP50 != 11 {
		t.Errorf("chat tokens p50: prompt %d output %d", c.PromptTokensP50, c.OutputTokensP50)
	}
	if g.Offered != 2 || !near(g.GoodputRatio, 0.5) || !hdrNear(g.Latency.TTFTSchedule.P50Ms, 1000) || !hdrNear(g.Latency.E2ESchedule.P99Ms, 9000) {
		t.Errorf("rag: offered %d goodput %.2f TTFT %+v E2E %+v", g.Offered, g.GoodputRatio, g.Latency.TTFTSchedule, g.Latency.E2ESchedule)
	}
	if g.PromptTokensP50 != 3000 || g.OutputTokensP50 != 200 {
		t.Errorf("rag tokens p50: prompt %d output %d", g.PromptTokensP50, g.OutputTokensP50)
	}
	// Never an average: the run's p99 TTFT is rag's 3 s, not a blend.
	if !hdrNear(res.Overall.Latency.TTFTSchedule.P99Ms, 3000) || c.Offered+g.Offered != res.Overall.Offered {
		t.Errorf("overall TTFT p99 %.1f, offered %d", res.Overall.Latency.TTFTSchedule.P99Ms, res.Overall.Offered)
	}
}

func TestOneProfileAddsNothing(t *testing.T) {
	a := mustNew(t, Config{Phases: burstPhases()})
	for i := range 10 {
		addAll(a, withProfile(okRec(time.Duration(11+i)*s, 0, 100*ms, 500*ms), "chat"))
	}
	if p := a.Result().Profiles; p != nil {
		t.Errorf("one profile: %+v", p)
	}
}

func TestProfilesMergeLosslessly(t *testing.T) {
	cfg := Config{Phases: burstPhases()}
	all, x, y := mustNew(t, cfg), mustNew(t, cfg), mustNew(t, cfg)
	for i := range 40 {
		r := withProfile(okRec(time.Duration(10+i)*s, 0, time.Duration(50+7*i)*ms, time.Duration(400+13*i)*ms), [...]string{"chat", "rag", "longgen"}[i%3])
		r.PromptTokens = 100 + 37*i
		all.Add(r)
		if i%2 == 0 {
			x.Add(r)
		} else {
			y.Add(r)
		}
	}
	if err := x.Merge(y); err != nil {
		t.Fatal(err)
	}
	if got, want := x.Result().Profiles, all.Result().Profiles; !reflect.DeepEqual(got, want) || len(got) != 3 {
		t.Errorf("merged profiles differ from one analyzer's:\n%+v\n%+v", got, want)
	}
}

// Each phase is split too, over its own records: the burst phase's rag
// requests are slow while the baseline's are not.
func TestProfilesSplitEachPhase(t *testing.T) {
	a := mustNew(t, Config{Phases: burstPhases()})
	for i := range 10 {
		at := time.Duration(12+i) * s
		addAll(a, withProfile(okRec(at, 0, 100*ms, 400*ms), "chat"), withProfile(okRec(at+500*ms, 0, 200*ms, 900*ms), "rag"))
	}
	for i := range 4 {
		at := time.Duration(41+2*i) * s
		addAll(a, withProfile(okRec(at, 0, 150*ms, 600*ms), "chat"), withProfile(okRec(at+s, 0, 4*s, 20*s), "rag"), withProfile(okRec(at+s+10*ms, 0, 4*s, 20*s), "rag"))
	}
	res := a.Result()
	base, burst := mustPhase(t, res, "baseline"), mustPhase(t, res, "burst")
	if len(base.Profiles) != 2 || len(burst.Profiles) != 2 {
		t.Fatalf("phase profiles: baseline %d, burst %d", len(base.Profiles), len(burst.Profiles))
	}
	br := burst.Profiles[1]
	if br.Name != "rag" || br.Offered != 8 || !near(br.Share, 8.0/12) || !hdrNear(br.Latency.TTFTSchedule.P50Ms, 4000) || br.Good != 0 {
		t.Errorf("burst rag: %+v", br)
	}
	if b := base.Profiles[1]; b.Offered != 10 || !hdrNear(b.Latency.TTFTSchedule.P99Ms, 200) || b.Completed != 10 {
		t.Errorf("baseline rag: offered %d TTFT p99 %.1f completed %d", b.Offered, b.Latency.TTFTSchedule.P99Ms, b.Completed)
	}
	// The burst's rag requests end in the recovery phase (20 s after 42–49 s).
	if rec := mustPhase(t, res, "recovery"); len(rec.Profiles) != 1 || rec.Profiles[0].Name != "rag" || rec.Profiles[0].Completed != 8 || rec.Profiles[0].Offered != 0 {
		t.Errorf("recovery profiles: %+v", rec.Profiles)
	}
	// A run of one profile splits no phase.
	one := mustNew(t, Config{Phases: burstPhases()})
	addAll(one, withProfile(okRec(12*s, 0, 100*ms, 400*ms), "chat"), withProfile(okRec(42*s, 0, 100*ms, 400*ms), "chat"))
	for _, p := range one.Result().Phases {
		if p.Profiles != nil {
			t.Errorf("one profile: phase %s split %+v", p.Name, p.Profiles)
		}
	}
}

// The split by profile starts only when a second label appears (the
// first label's records until then are copied from the phases): whatever
// the order of the records, and however they are split between merged
// analyzers, the result is the same — every phase, profile and window.
func TestProfilesSplitLateEqualsEarly(t *testing.T) {
	cfg := Config{Phases: burstPhases()}
	rng := rand.New(rand.NewPCG(3, 9))
	var recs []*record.Record
	for i := range 300 {
		sched := time.Duration(rng.Int64N(int64(110 * s)))
		var r *record.Record
		if i%17 == 0 {
			r = failRec(sched, record.Timeout)
		} else {
			r = okRec(sched, 0, time.Duration(50+rng.IntN(900))*ms, time.Duration(1000+rng.IntN(20000))*ms)
		}
		r.Profile = [...]string{"chat", "rag", "longgen"}[rng.IntN(3)]
		recs = append(recs, r)
	}
	result := func(order []*record.Record, parts int) []byte {
		as := make([]*Analyzer, parts)
		for i := range as {
			as[i] = mustNew(t, cfg)
		}
		for i, r := range order {
			as[i*parts/len(order)].Add(r)
		}
		for _, b := range as[1:] {
			if err := as[0].Merge(b); err != nil {
				t.Fatal(err)
			}
		}
		j, err := json.Marshal(as[0].Result())
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	early := result(recs, 1) // labels mixed from the second record on
	byLabel := slices.Clone(recs)
	slices.SortStableFunc(byLabel, func(a, b *record.Record) int { return strings.Compare(a.Profile, b.Profile) })
	reversed := slices.Clone(byLabel)
	slices.Reverse(reversed)
	for name, got := range map[string][]byte{
		"sorted by label (split after 1/3)":   result(byLabel, 1),
		"sorted by label, 3 analyzers merged": result(byLabel, 3),
		"sorted by label, 2 analyzers merged": result(byLabel, 2),
		"mixed, 4 analyzers merged":           result(recs, 4),
		"reversed, sorted by label, 2 merged": result(reversed, 2),
	} {
		if !bytes.Equal(got, early) {
			t.Errorf("%s: the result differs from the records' in arrival order", name)
		}
	}
}
