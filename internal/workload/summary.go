package workload

import (
	"maps"
	"math"
	"slices"

	"github.com/surge-bench/surge/internal/schedule"
)

// Lengths is an exact tally of lengths in tokens: how often each length
// was seen. Lengths are integers in [0, MaxPromptTokens], so the tally
// holds at most one entry per distinct length, however many are added.
type Lengths struct {
	counts map[int]int64
	n      int64
	sum    int64
	sorted []int // distinct lengths, ascending; nil after an Add
}

// Add counts one length (negative lengths count as 0).
func (l *Lengths) Add(v int) {
	if l.counts == nil {
		l.counts = map[int]int64{}
	}
	v = max(v, 0)
	if _, seen := l.counts[v]; !seen {
		l.sorted = nil
	}
	l.counts[v]++
	l.n++
	l.sum += int64(v)
}

// Count is the number of lengths added.
func (l *Lengths) Count() int64 { return l.n }

// Sum is the total of the lengths added, tokens.
func (l *Lengths) Sum() int64 { return l.sum }

// Mean is Sum / Count (0 when empty).
func (l *Lengths) Mean() float64 {
	if l.n == 0 {
		return 0
	}
	return float64(l.sum) / float64(l.n)
}

func (l *Lengths) values() []int {
	if l.sorted == nil {
		l.sorted = slices.Sorted(maps.Keys(l.counts))
	}
	return l.sorted
}

// Quantile is the q-quantile by nearest rank, as in package analyze: the
// smallest length v such that at least ⌈q·N⌉ of the N lengths are ≤ v
// (rank at least 1). Quantile(1) is the maximum; 0 when empty.
func (l *Lengths) Quantile(q float64) int {
	if l.n == 0 {
		return 0
	}
	rank := int64(math.Ceil(q * float64(l.n)))
	rank = min(max(rank, 1), l.n)
	var seen int64
	for _, v := range l.values() {
		seen += l.counts[v]
		if seen >= rank {
			return v
		}
	}
	return l.values()[len(l.sorted)-1]
}

// Min is the smallest length (0 when empty).
func (l *Lengths) Min() int {
	if l.n == 0 {
		return 0
	}
	return l.values()[0]
}

// Max is the largest length (0 when empty).
func (l *Lengths) Max() int {
	if l.n == 0 {
		return 0
	}
	v := l.values()
	return v[len(v)-1]
}

// Values returns the distinct lengths, ascending, and how often each was
// seen: the rows of an empirical distribution (Dist.Values, Dist.Counts).
func (l *Lengths) Values() ([]int, []int64) {
	vals := slices.Clone(l.values())
	counts := make([]int64, len(vals))
	for i, v := range vals {
		counts[i] = l.counts[v]
	}
	return vals, counts
}

// Bin is one bar of a Histogram: the lengths in [Lo, Hi] and how many
// there were.
type Bin struct {
	Lo, Hi int
	Count  int64
}

// binEdges are the lower edges of the histogram's bins: half-octaves,
// round(2^(k/2)) for k = 0, 1, 2, … with duplicates dropped — 1, 2, 3, 4,
// 6, 8, 11, 16, 23, 32, 45, 64, 91, 128, … — so that every bin spans about
// √2 of its lower edge and a length distribution's shape on a log scale
// shows at every size.
var binEdges = func() []int {
	edges := []int{0}
	for k := 0; ; k++ {
		e := int(math.Round(math.Pow(2, float64(k)/2)))
		if e != edges[len(edges)-1] {
			edges = append(edges, e)
		}
		if e > MaxPromptTokens {
			return edges
		}
	}
}()

// Histogram is the tally in log-spaced bins (binEdges: bin i holds
// [edge_i, edge_{i+1} − 1]), from the bin of the smallest length to the bin
// of the largest, empty bins in between included. Nil when empty.
func (l *Lengths) Histogram() []Bin {
	if l.n == 0 {
		return nil
	}
	bin := func(v int) int {
		i, found := slices.BinarySearch(binEdges, v)
		if !found {
			i--
		}
		return i
	}
	lo, hi := bin(l.Min()), bin(l.Max())
	out := make([]Bin, 0, hi-lo+1)
	for i := lo; i <= hi; i++ {
		out = append(out, Bin{Lo: binEdges[i], Hi: binEdges[i+1] - 1})
	}
	for v, c := range l.counts {
		out[bin(v)-lo].Count += c
	}
	return out
}

// Summary describes a set of requests before any is sent: how many, the
// distributions of their intended prompt lengths and of their max_tokens,
// the profiles they came from, their sessions and the prompt tokens they
// share with other requests. It keeps numbers only, never text.
type Summary struct {
	Requests     int64
	Prompt       Lengths          // intended prompt tokens (Request.PromptTokens)
	MaxTokens    Lengths          // max_tokens (Request.MaxTokens; the output cap, the output with ignore_eos)
	PrefixTokens int64            // Σ Request.PrefixTokens: intended prompt tokens shared with other requests
	Profiles     map[string]int64 // requests per profile
	DatasetRows  int64            // requests that came from a dataset row
	turns        map[int64]int    // session → turns seen
}

// Add counts one request.
func (s *Summary) Add(r *Request) {
	if s.Profiles == nil {
		s.Profiles, s.turns = map[string]int64{}, map[int64]int{}
	}
	s.Requests++
	s.Prompt.Add(r.PromptTokens)
	s.MaxTokens.Add(r.MaxTokens)
	s.PrefixTokens += int64(min(max(r.PrefixTokens, 0), r.PromptTokens))
	s.Profiles[r.Profile]++
	if r.Session > 0 && r.Branch == 0 {
		s.turns[r.Session]++
	}
	if r.DatasetRow > 0 {
		s.DatasetRows++
	}
}

// Sessions is the number of distinct sessions among the requests (0 when
// every request stands alone).
func (s *Summary) Sessions() int64 { return int64(len(s.turns)) }

// TurnsPerSession tallies the turns of each session (fan-out sub-requests
// not counted as turns).
func (s *Summary) TurnsPerSession() *Lengths {
	var l Lengths
	for _, n := range s.turns {
		l.Add(n)
	}
	return &l
}

// SharedPrefixShare is the share of intended prompt tokens that lie in
// prefixes shared with other requests: Σ PrefixTokens / Σ PromptTokens
// (0 when there are no prompt tokens).
func (s *Summary) SharedPrefixShare() float64 {
	if s.Prompt.Sum() == 0 {
		return 0
	}
	return float64(s.PrefixTokens) / float64(s.Prompt.Sum())
}

// RatioAtMedian is the output/prompt ratio of the medians: p50(max_tokens)
// / p50(prompt tokens) (0 when there is no prompt).
func (s *Summary) RatioAtMedian() float64 {
	if p := s.Prompt.Quantile(0.5); p > 0 {
		return float64(s.MaxTokens.Quantile(0.5)) / float64(p)
	}
	return 0
}

// RatioOverall is the output/prompt ratio of the totals: Σ max_tokens /
// Σ prompt tokens — what the tokens of the whole workload weigh (0 when
// there is no prompt).
func (s *Summary) RatioOverall() float64 {
	if p := s.Prompt.Sum(); p > 0 {
		return float64(s.MaxTokens.Sum()) / float64(p)
	}
	return 0
}

// Summarize builds the request of every arrival with a Generator for cfg,
// exactly as a run would (the prompt text too, then dropped), and
// summarises them. With sessions (sess non-nil) every arrival starts a
// session and every turn and sub-request is counted, each answer assumed
// to fill its max_tokens (the real lengths are the server's: the summary
// shows the longest conversations the plan can build).
func Summarize(cfg Config, sess *SessionConfig, arrivals []schedule.Arrival) (*Summary, error) {
	return summarize(cfg, sess, len(arrivals), func(i int) schedule.Arrival { return arrivals[i] })
}

// Draw summarises n requests (with sessions: n sessions) for arrivals
// 0..n−1 without a schedule: the workload alone, as `surge workload
// inspect` shows it.
func Draw(cfg Config, sess *SessionConfig, n int) (*Summary, error) {
	return summarize(cfg, sess, n, func(i int) schedule.Arrival { return schedule.Arrival{Seq: int64(i)} })
}

func summarize(cfg Config, sess *SessionConfig, n int, arrival func(int) schedule.Arrival) (*Summary, error) {
	var s Summary
	if sess != nil {
		ss, err := NewSessions(cfg, *sess)
		if err != nil {
			return nil, err
		}
		for i := range n {
			c := ss.Start(arrival(i))
			for turn := 1; turn <= c.Turns(); turn++ {
				reqs := c.Turn(turn)
				for j := range reqs {
					s.Add(&reqs[j])
				}
				c.Answered(turn, reqs[0].MaxTokens)
			}
		}
		return &s, nil
	}
	g, err := New(cfg)
	if err != nil {
		return nil, err
	}
	for i := range n {
		r := g.Generate(arrival(i))
		s.Add(&r)
	}
	return &s, nil
}
