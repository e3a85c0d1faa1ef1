package analyze

import (
	"slices"

	"github.com/surge-bench/surge/internal/record"
)

// MaxTurnRows bounds the per-turn table: turns from MaxTurnRows on share
// its last row (AndLater).
const MaxTurnRows = 20

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
	AndLater bool  `json:"and_later,omitempty"` // the row also holds every later turn (Turn = MaxTurnRows)
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
// record belongs to a session.
func Sessions(cfg Config, recs []record.Record) *SessionResult {
	an, err := New(cfg)
	if err != nil {
		return nil
	}
	included := func(r *record.Record) bool {
		pi := an.phaseOf(r.ScheduledNs)
		return pi >= 0 && !an.cfg.Phases[pi].Excluded
	}
	type session struct {
		planned, turns int
		counted        bool // its first turn is in a non-excluded phase
		bad, cancelled bool
	}
	var (
		sessions = map[int64]*session{}
		rows     []*acc
		prompts  [][]int
		prefixes [][]int
		seen     bool
	)
	for i := range recs {
		r := &recs[i]
		if r.Session == 0 || r.Turn != 1 || r.Branch != 0 {
			continue
		}
		sessions[r.Session] = &session{counted: included(r)}
	}
	for i := range recs {
		r := &recs[i]
		if r.Session == 0 || r.Turn < 1 {
			continue
		}
		seen = true
		s := sessions[r.Session]
		if s == nil || !s.counted {
			continue // started in the warmup (or its first turn is missing)
		}
		s.planned = max(s.planned, r.SessionTurns)
		s.turns = max(s.turns, r.Turn)
		smp := an.sampleOf(r)
		switch {
		case smp.slot == slotCancelled:
			s.cancelled = true
		case !smp.good:
			s.bad = true
		}
		k := min(r.Turn, MaxTurnRows) - 1
		for len(rows) <= k {
			rows = append(rows, &acc{packed: true})
			prompts, prefixes = append(prompts, nil), append(prefixes, nil)
		}
		rows[k].observe(&smp)
		if smp.slot == slotOK {
			if r.UsageFromServer && r.PromptTokens > 0 {
				prompts[k] = append(prompts[k], r.PromptTokens)
			}
			prefixes[k] = append(prefixes[k], r.PrefixTokens)
		}
	}
	if !seen {
		return nil
	}
	out := &SessionResult{}
	for _, s := range sessions {
		if !s.counted {
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
	timeoutMs := durMs(an.cfg.Timeout)
	for k, a := range rows {
		st := a.stats(0, timeoutMs)
		out.Turns = append(out.Turns, TurnResult{
			Turn: k + 1, AndLater: k+1 == MaxTurnRows,
			Requests: st.Offered, OK: st.Succeeded, Good: st.Good, GoodputRatio: st.GoodputRatio,
			TTFTSend: st.Latency.TTFTSend, TTFTSchedule: st.Latency.TTFTSchedule,
			PromptTokensP50: median(prompts[k]), PrefixTokensP50: median(prefixes[k]),
		})
	}
	return out
}

// median is the nearest-rank median of v (0 when empty); v is sorted.
func median(v []int) int {
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	return v[(len(v)+1)/2-1]
}
