package analyze

import (
	"slices"

	"github.com/surge-bench/surge/internal/record"
)

// maxTurnRows bounds the per-turn table: turns from maxTurnRows on share
// its last row (AndLater).
const maxTurnRows = 20

// SessionResult is the analysis of a sessions run (--sessions), per turn
// and per session, over the sessions whose first turn falls in a phase
// that is not excluded (a session belongs to the phase of its first turn;
// every turn of such a session counts in its row, wherever it falls).
//
// A session is judged by its records alone (each carries the turns the
// session was planned to have, session_turns):
//
//	good       every planned turn has records and every request of the session is good
//	bad        some request of the session is not good (failed, dropped, too late);
//	           a request cancelled by Ctrl-C does not make it bad
//	unfinished neither: cut by the plan's end, a Stop or Ctrl-C before its last turn
//
//	session goodput ratio = good / (good + bad)   (unfinished sessions are not judged)
type SessionResult struct {
	Sessions     int64        `json:"sessions"`      // sessions whose first turn falls in a non-excluded phase
	Good         int64        `json:"good"`          // every planned turn ran, every request met its deadline
	Bad          int64        `json:"bad"`           // some request missed its deadline or failed
	Unfinished   int64        `json:"unfinished"`    // cut before their last turn, every request so far good
	GoodputRatio float64      `json:"goodput_ratio"` // good / (good + bad); 0 when none was judged
	Turns        []TurnResult `json:"turns"`         // one row per turn number
}

// TurnResult is one row of the per-turn table: the requests of turn Turn
// of every session counted (fan-out sub-requests included), counted and
// judged as a phase's are.
type TurnResult struct {
	Turn     int   `json:"turn"`                // 1-based
	AndLater bool  `json:"and_later,omitempty"` // the row also holds every later turn (Turn = maxTurnRows)
	Requests int64 `json:"requests"`            // offered: scheduled requests of this turn
	OK       int64 `json:"ok"`
	Good     int64 `json:"good"`
	// GoodputRatio is good / requests.
	GoodputRatio float64 `json:"goodput_ratio"`
	TTFTSend     Dist    `json:"ttft_send"`
	TTFTSchedule Dist    `json:"ttft_schedule"` // from the turn's ready time (previous answer + think time)
	// PromptTokensP50 is the median server-reported prompt tokens of the
	// ok requests (0 when none reported usage); PrefixTokensP50 the median
	// intended tokens they share with the turn before.
	PromptTokensP50 int `json:"prompt_tokens_p50"`
	PrefixTokensP50 int `json:"prefix_tokens_p50"`
}

// Sessions analyses the session records among recs with cfg (the phases,
// exclusions, deadlines and timeout of the run's analysis); nil when no
// record belongs to a session. It is NewSessions fed with every record.
func Sessions(cfg Config, recs []record.Record) *SessionResult {
	s := NewSessions(cfg)
	if s == nil {
		return nil
	}
	for i := range recs {
		s.Add(&recs[i])
	}
	return s.Result()
}

// SessionStats accumulates the session records of a run as they come
// (NewSessions, Add, Result), in any order: a record whose session's first
// turn has not come yet waits for it (its session is counted only if that
// first turn falls in a phase that is not excluded), so what waits is
// bounded by the records that arrive before their session's first turn,
// not by the run's length. It keeps one small entry per session.
type SessionStats struct {
	an       *Analyzer
	sessions map[int64]*sessionAcc
	rows     []*acc
	prompts  []map[int]int64 // per turn row: prompt tokens → ok requests
	prefixes []map[int]int64
	seen     bool
}

type sessionAcc struct {
	planned, turns int
	known          bool // its first turn has come
	counted        bool // its first turn is in a non-excluded phase
	bad, cancelled bool
	pending        []record.Record // records that came before the first turn
}

// NewSessions returns an empty SessionStats for cfg, nil when cfg is not a
// valid analysis configuration.
func NewSessions(cfg Config) *SessionStats {
	an, err := New(cfg)
	if err != nil {
		return nil
	}
	return &SessionStats{an: an, sessions: map[int64]*sessionAcc{}}
}

// Add accounts one record (records outside sessions are ignored). It does
// not keep r.
func (st *SessionStats) Add(r *record.Record) {
	if r.Session == 0 || r.Turn < 1 {
		return
	}
	st.seen = true
	s := st.sessions[r.Session]
	if s == nil {
		s = &sessionAcc{}
		st.sessions[r.Session] = s
	}
	if r.Turn == 1 && r.Branch == 0 && !s.known {
		pi := st.an.phaseOf(r.ScheduledNs)
		s.known, s.counted = true, pi >= 0 && !st.an.cfg.Phases[pi].Excluded
		st.observe(s, r)
		for i := range s.pending {
			st.observe(s, &s.pending[i])
		}
		s.pending = nil
		return
	}
	if !s.known {
		s.pending = append(s.pending, *r)
		return
	}
	st.observe(s, r)
}

// observe counts r in its session and its turn's row, when the session is
// counted.
func (st *SessionStats) observe(s *sessionAcc, r *record.Record) {
	if !s.counted {
		return // started in the warmup
	}
	s.planned = max(s.planned, r.SessionTurns)
	s.turns = max(s.turns, r.Turn)
	smp := st.an.sampleOf(r)
	switch {
	case smp.slot == slotCancelled:
		s.cancelled = true
	case !smp.good:
		s.bad = true
	}
	k := min(r.Turn, maxTurnRows) - 1
	for len(st.rows) <= k {
		st.rows = append(st.rows, &acc{packed: true})
		st.prompts, st.prefixes = append(st.prompts, map[int]int64{}), append(st.prefixes, map[int]int64{})
	}
	st.rows[k].observe(&smp)
	if smp.slot == slotOK {
		if r.UsageFromServer && r.PromptTokens > 0 {
			st.prompts[k][r.PromptTokens]++
		}
		st.prefixes[k][r.PrefixTokens]++
	}
}

// Result is the analysis of the session records added; nil when none
// belonged to a session. A session whose first turn never came is not
// counted.
func (st *SessionStats) Result() *SessionResult {
	if st == nil || !st.seen {
		return nil
	}
	out := &SessionResult{}
	for _, s := range st.sessions {
		if !s.known || !s.counted {
			continue
		}
		out.Sessions++
		switch {
		case s.bad:
			out.Bad++
		case s.cancelled || s.turns < s.planned:
			out.Unfinished++
		default:
			out.Good++
		}
	}
	out.GoodputRatio = ratio(out.Good, out.Good+out.Bad)
	timeoutMs := durMs(st.an.cfg.Timeout)
	for k, a := range st.rows {
		s := a.stats(0, timeoutMs)
		out.Turns = append(out.Turns, TurnResult{
			Turn: k + 1, AndLater: k+1 == maxTurnRows,
			Requests: s.Offered, OK: s.Succeeded, Good: s.Good, GoodputRatio: s.GoodputRatio,
			TTFTSend: s.Latency.TTFTSend, TTFTSchedule: s.Latency.TTFTSchedule,
			PromptTokensP50: countsMedian(st.prompts[k]), PrefixTokensP50: countsMedian(st.prefixes[k]),
		})
	}
	return out
}

// countsMedian is the nearest-rank median of the values counted in c
// (value → how many times), 0 when empty: median of the values listed.
func countsMedian(c map[int]int64) int {
	var n int64
	keys := make([]int, 0, len(c))
	for v, k := range c {
		keys = append(keys, v)
		n += k
	}
	if n == 0 {
		return 0
	}
	slices.Sort(keys)
	rank := (n+1)/2 - 1 // 0-based, as median's v[(len(v)+1)/2-1]
	for _, v := range keys {
		if rank < c[v] {
			return v
		}
		rank -= c[v]
	}
	return keys[len(keys)-1]
}
