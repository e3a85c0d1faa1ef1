package workload

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/surge-bench/surge/internal/schedule"
)

// Nearest-rank quantiles, computed by hand: of 1..10 (each once) the p50
// is the 5th value, p90 the 9th, p99 the 10th.
func TestLengthsQuantile(t *testing.T) {
	var l Lengths
	for v := 10; v >= 1; v-- {
		l.Add(v)
	}
	for q, want := range map[float64]int{0: 1, 0.1: 1, 0.11: 2, 0.5: 5, 0.9: 9, 0.91: 10, 0.99: 10, 1: 10} {
		if got := l.Quantile(q); got != want {
			t.Errorf("q %g: %d, want %d", q, got, want)
		}
	}
	if l.Min() != 1 || l.Max() != 10 || l.Sum() != 55 || l.Mean() != 5.5 || l.Count() != 10 {
		t.Errorf("min %d max %d sum %d mean %g count %d", l.Min(), l.Max(), l.Sum(), l.Mean(), l.Count())
	}
	// Repeated values: 3×100 and 1×1000: p50 and p75 are 100, p76 1000.
	var r Lengths
	for _, v := range []int{100, 1000, 100, 100} {
		r.Add(v)
	}
	if r.Quantile(0.5) != 100 || r.Quantile(0.75) != 100 || r.Quantile(0.76) != 1000 {
		t.Errorf("repeated: p50 %d p75 %d p76 %d", r.Quantile(0.5), r.Quantile(0.75), r.Quantile(0.76))
	}
	var empty Lengths
	if empty.Quantile(0.5) != 0 || empty.Max() != 0 || empty.Mean() != 0 || empty.Histogram() != nil {
		t.Error("an empty tally is not all zero")
	}
}

// The tally's quantiles agree with sorting every value (a property over
// random data).
func TestLengthsQuantileMatchesSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 50 {
		var l Lengths
		var all []int
		for range 1 + rng.IntN(500) {
			v := 1 + rng.IntN(1+rng.IntN(5000))
			l.Add(v)
			all = append(all, v)
		}
		slices.Sort(all)
		for _, q := range []float64{0.5, 0.9, 0.99, 1} {
			rank := int(float64(len(all))*q + 0.999999999)
			want := all[max(rank, 1)-1]
			if got := l.Quantile(q); got != want {
				t.Fatalf("trial %d, n %d, q %g: %d, want %d", trial, len(all), q, got, want)
			}
		}
	}
}

// Histogram bins are half-octaves, contiguous, hold every value once and
// each value in the bin whose range contains it.
func TestHistogramBins(t *testing.T) {
	if got := binEdges[:16]; !slices.Equal(got, []int{0, 1, 2, 3, 4, 6, 8, 11, 16, 23, 32, 45, 64, 91, 128, 181}) {
		t.Fatalf("edges %v", got)
	}
	var l Lengths
	for _, v := range []int{32, 44, 45, 100, 100, 127, 128, 4096} {
		l.Add(v)
	}
	bins := l.Histogram()
	if bins[0].Lo != 32 || bins[0].Hi != 44 || bins[0].Count != 2 {
		t.Errorf("first bin %+v, want 32–44 holding 32 and 44", bins[0])
	}
	if bins[1].Lo != 45 || bins[1].Count != 1 || bins[3].Lo != 91 || bins[3].Hi != 127 || bins[3].Count != 3 {
		t.Errorf("bins %+v", bins)
	}
	last := bins[len(bins)-1]
	if last.Lo > 4096 || last.Hi < 4096 || last.Count != 1 {
		t.Errorf("last bin %+v, want the one holding 4096", last)
	}
	var total int64
	for i, b := range bins {
		total += b.Count
		if i > 0 && b.Lo != bins[i-1].Hi+1 {
			t.Errorf("bin %d starts at %d, previous ends at %d", i, b.Lo, bins[i-1].Hi)
		}
	}
	if total != l.Count() {
		t.Errorf("bins hold %d of %d", total, l.Count())
	}
	var one Lengths
	one.Add(200)
	if h := one.Histogram(); len(h) != 1 || h[0].Lo > 200 || h[0].Hi < 200 {
		t.Errorf("a fixed length: %+v", h)
	}
}

// The summary's ratios, sessions and shared prefix, by hand.
func TestSummary(t *testing.T) {
	var s Summary
	reqs := []Request{
		{Profile: "chat", PromptTokens: 100, MaxTokens: 10, Session: 1, Turn: 1},
		{Profile: "chat", PromptTokens: 300, MaxTokens: 30, Session: 1, Turn: 2, PrefixTokens: 100},
		{Profile: "chat", PromptTokens: 300, MaxTokens: 20, Session: 1, Turn: 2, Branch: 1, PrefixTokens: 300},
		{Profile: "rag", PromptTokens: 1000, MaxTokens: 40, Session: 2, Turn: 1},
	}
	for i := range reqs {
		s.Add(&reqs[i])
	}
	// Σ prompt 1700, Σ max_tokens 100, Σ prefix 400; medians 300 and 20.
	if s.Requests != 4 || s.RatioOverall() != 100.0/1700 || s.RatioAtMedian() != 20.0/300 || s.SharedPrefixShare() != 400.0/1700 {
		t.Errorf("ratios %g %g, share %g", s.RatioOverall(), s.RatioAtMedian(), s.SharedPrefixShare())
	}
	if s.Sessions() != 2 || s.TurnsPerSession().Max() != 2 || s.TurnsPerSession().Sum() != 3 {
		t.Errorf("sessions %d, turns %d max %d", s.Sessions(), s.TurnsPerSession().Sum(), s.TurnsPerSession().Max())
	}
	var out strings.Builder
	if err := s.WriteText(&out, true); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"requests: 4", "profiles: chat 75.0%, rag 25.0%", "sessions: 2; turns per session p50 1, p90 2, max 2 (3 turns)",
		"shared prefixes: 23.5% of prompt tokens (400 of 1700)", "prompt tokens (intended), log-spaced bins:", "█", "output/prompt: 0.067 at the median"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, out.String())
		}
	}
}

// Draw summarises the profile's own distributions: the chat profile's
// prompt median is 500 and its cap 1024; a fixed length gives one bin.
func TestDraw(t *testing.T) {
	chat, _ := Lookup(ProfileChat)
	s, err := Draw(Config{Profile: chat, Seed: 1}, nil, 10_000)
	if err != nil {
		t.Fatal(err)
	}
	if p50 := s.Prompt.Quantile(0.5); p50 < 480 || p50 > 520 {
		t.Errorf("p50 prompt %d, want ≈500", p50)
	}
	if s.MaxTokens.Max() > 1024 || s.Prompt.Min() < 32 || s.Prompt.Max() > 4096 {
		t.Errorf("outside the profile's range: prompt [%d, %d], max_tokens ≤ %d", s.Prompt.Min(), s.Prompt.Max(), s.MaxTokens.Max())
	}
	again, _ := Draw(Config{Profile: chat, Seed: 1}, nil, 10_000)
	if again.Prompt.Quantile(0.9) != s.Prompt.Quantile(0.9) || again.MaxTokens.Sum() != s.MaxTokens.Sum() {
		t.Error("the same seed drew differently")
	}
	fixed := Profile{Name: "f", Prompt: Fixed(200), Output: Fixed(20), MaxTokens: 20}
	arr := []schedule.Arrival{{Seq: 0}, {Seq: 1, PromptTokens: 50, OutputTokens: 5}}
	s2, err := Summarize(Config{Profile: fixed}, nil, arr)
	if err != nil {
		t.Fatal(err)
	}
	if s2.Prompt.Min() != 50 || s2.Prompt.Max() != 200 || s2.Profiles[ProfileReplay] != 1 {
		t.Errorf("replayed lengths not used: %+v", s2.Profiles)
	}
}

// With sessions every turn is counted, and the conversation's growth shows
// as shared prefixes.
func TestDrawSessions(t *testing.T) {
	chat, _ := Lookup(ProfileChat)
	turns, _ := ParseLength("3")
	s, err := Draw(Config{Profile: chat, Seed: 1}, &SessionConfig{Turns: turns}, 100)
	if err != nil {
		t.Fatal(err)
	}
	if s.Sessions() != 100 || s.Requests != 300 {
		t.Fatalf("%d sessions, %d requests; want 100 and 300", s.Sessions(), s.Requests)
	}
	if sh := s.SharedPrefixShare(); sh < 0.3 || sh > 0.9 {
		t.Fatalf("shared prefix share %.2f: turns 2 and 3 resend the history", sh)
	}
}
