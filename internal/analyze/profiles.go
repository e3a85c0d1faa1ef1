package analyze

import (
	"slices"
)

// ProfileResult is the analysis of one workload profile's requests (the
// record's profile label) over the measured phases — those in Overall:
// every count, rate, ratio and percentile is computed from that profile's
// own records, as Overall is from all of them; nothing is averaged across
// profiles. Rates are over Overall's duration, so a profile's offered
// rate is its part of the run's.
type ProfileResult struct {
	Name string `json:"name"`
	// Share is the profile's part of the measured arrivals: Offered /
	// Overall.Offered.
	Share float64 `json:"share"`
	// PromptTokensP50 and OutputTokensP50 are the exact medians (nearest
	// rank) of the server's usage counts over the profile's ok requests that
	// reported them; 0 when none did.
	PromptTokensP50 int64 `json:"prompt_tokens_p50"`
	OutputTokensP50 int64 `json:"output_tokens_p50"`
	Stats
}

// profileAcc accumulates one profile: the group's counts and latencies,
// and how often each token count occurred, for exact medians (token counts
// repeat: a map of counts stays small however many requests there are).
type profileAcc struct {
	acc            acc
	prompt, output tokenCounts // usage tokens of ok requests (> 0 only)
}

// tokenCounts counts how often each token count occurred.
type tokenCounts map[int64]int64

// median is the exact nearest-rank median (the ceil(N/2)-th smallest
// value, as every percentile here), 0 when there are none.
func (tc tokenCounts) median() int64 {
	var n int64
	for _, c := range tc {
		n += c
	}
	if n == 0 {
		return 0
	}
	keys := make([]int64, 0, len(tc))
	for k := range tc {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	r, seen := max(1, (50*n+99)/100), int64(0)
	for _, k := range keys {
		if seen += tc[k]; seen >= r {
			return k
		}
	}
	return keys[len(keys)-1]
}

// profileSet holds one accumulator per profile label.
type profileSet map[string]*profileAcc

func (ps profileSet) get(name string) *profileAcc {
	p := ps[name]
	if p == nil {
		p = &profileAcc{acc: acc{packed: true}, prompt: tokenCounts{}, output: tokenCounts{}}
		ps[name] = p
	}
	return p
}

// observe accounts a measured record's sample to its profile.
func (ps profileSet) observe(name string, s *sample) {
	p := ps.get(name)
	p.acc.observe(s)
	if s.slot == slotOK {
		if s.prompt > 0 {
			p.prompt[s.prompt]++
		}
		if s.output > 0 {
			p.output[s.output]++
		}
	}
}

func (ps profileSet) merge(b profileSet) {
	for name, src := range b {
		p := ps.get(name)
		p.acc.merge(&src.acc)
		for k, c := range src.prompt {
			p.prompt[k] += c
		}
		for k, c := range src.output {
			p.output[k] += c
		}
	}
}

// results lists the profiles by name, or nil when there are fewer than two
// (a single profile's breakdown would repeat Overall).
func (ps profileSet) results(durNs int64, timeoutMs float64, overallOffered int64) []ProfileResult {
	if len(ps) < 2 {
		return nil
	}
	names := make([]string, 0, len(ps))
	for n := range ps {
		names = append(names, n)
	}
	slices.Sort(names)
	out := make([]ProfileResult, 0, len(names))
	for _, n := range names {
		p := ps[n]
		st := p.acc.stats(durNs, timeoutMs)
		out = append(out, ProfileResult{Name: n, Share: ratio(st.Offered, overallOffered),
			PromptTokensP50: p.prompt.median(), OutputTokensP50: p.output.median(), Stats: st})
	}
	return out
}
