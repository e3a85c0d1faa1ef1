package analyze

import (
	"slices"
)

// ProfileResult is the analysis of one workload profile's requests (the
// record's profile label) in a group: the measured phases (Overall's
// records, in Result.Profiles) or one phase (PhaseResult.Profiles). Every
// count, rate, ratio and percentile is computed from that profile's own
// records as the group's are from all of them, nothing averaged across
// profiles; rates are over the group's duration, so a profile's offered
// rate is its part of the group's, and Completed counts its ok requests
// whose done time falls in the group, as the group's Completed does.
type ProfileResult struct {
	Name string `json:"name"`
	// Share is the profile's part of the group's arrivals: Offered /
	// Overall.Offered (in a phase's split, of the phase's).
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

// observe accounts a measured record's sample to its profile: its token
// counts, and its accumulator when accs (Analyzer.split).
func (ps profileSet) observe(name string, s *sample, accs bool) {
	p := ps.get(name)
	if accs {
		p.acc.observe(s)
	}
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

// manyProfiles reports whether the run's records (in any phase) carry
// more than one profile label: only then are results split by profile
// (a single profile's breakdown would repeat its group).
func (a *Analyzer) manyProfiles() bool {
	var first string
	seen := false
	for _, ps := range a.byPhase {
		for name := range ps {
			if seen && name != first {
				return true
			}
			first, seen = name, true
		}
	}
	return false
}

// results lists the profiles by name; groupOffered is the arrivals of the
// group they split.
func (ps profileSet) results(durNs int64, timeoutMs float64, groupOffered int64) []ProfileResult {
	if len(ps) == 0 {
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
		out = append(out, ProfileResult{Name: n, Share: ratio(st.Offered, groupOffered),
			PromptTokensP50: p.prompt.median(), OutputTokensP50: p.output.median(), Stats: st})
	}
	return out
}

// countProfileCompletion counts an ok request of profile name that ended
// at done (ns) in the phase its done time falls in, and in the measured
// split when that phase is measured: completions by completion time, as
// for the phases and Overall.
func (a *Analyzer) countProfileCompletion(name string, done int64) {
	di := a.phaseOf(done)
	if di < 0 || !a.split { // unsplit: the phases count it (splitProfiles)
		return
	}
	a.byPhase[di].get(name).acc.completed++
	if !a.cfg.Phases[di].Excluded {
		a.profiles.get(name).acc.completed++
	}
}

// splitProfiles starts accumulating by profile: the one label seen so
// far gets its phases' accumulators (every record until now was its), and
// from here on each record goes to its profile's too. Idempotent.
func (a *Analyzer) splitProfiles() {
	if a.split {
		return
	}
	a.split = true
	if !a.labelled {
		return
	}
	for pi, ph := range a.phases {
		if ph.offered() == 0 && ph.completed == 0 {
			continue // the label never reached this phase
		}
		a.byPhase[pi].get(a.label).acc.merge(ph)
		if !a.cfg.Phases[pi].Excluded {
			a.profiles.get(a.label).acc.merge(ph)
		}
	}
}
