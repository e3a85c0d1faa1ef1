package run

import (
	"fmt"
	"strings"

	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/schedule"
)

// replayedTraces describes, for the manifest, the trace of every replay
// phase of plan: format, rows kept, slice, speed and the prompt tokens in
// blocks an earlier kept entry had.
func replayedTraces(plan schedule.Plan) []record.ReplayedTrace {
	var out []record.ReplayedTrace
	for i := range plan.Phases {
		ph := &plan.Phases[i]
		t := ph.Trace
		if t == nil || ph.Arrival != schedule.ArrivalReplay {
			continue
		}
		kept := ph.Replayed()
		speed := ph.Speed
		if speed == 0 {
			speed = 1
		}
		rt := record.ReplayedTrace{Phase: ph.Name, File: t.Name, Format: t.Format, Rows: t.Rows, Kept: kept,
			OffsetNs: int64(t.Offset), WindowNs: int64(t.Window), Speed: speed}
		for _, e := range t.Entries {
			if e.Blocks != nil {
				rt.BlockTokens = e.Blocks.Tokens
				break
			}
		}
		rt.PromptTokens, rt.RepeatedTokens = t.PrefixTokens(kept)
		if rt.PromptTokens > 0 {
			rt.RepeatedShare = float64(rt.RepeatedTokens) / float64(rt.PromptTokens)
		}
		out = append(out, rt)
	}
	return out
}

// traceCacheState is the cache state that replayed traces with prompt
// blocks imply, "" when none has any.
func traceCacheState(traces []record.ReplayedTrace, noNonce bool) string {
	var parts []string
	for _, t := range traces {
		if t.BlockTokens == 0 {
			continue
		}
		parts = append(parts, fmt.Sprintf("phase %s: %.1f%% of prompt tokens (%d of %d) in blocks an earlier request of the %s trace had (hash_ids, %d-token blocks)",
			t.Phase, 100*t.RepeatedShare, t.RepeatedTokens, t.PromptTokens, t.Format, t.BlockTokens))
	}
	if len(parts) == 0 {
		return ""
	}
	rest := "each request's own part unique (nonce)"
	if noNonce {
		rest = "prompts without hash ids share prefixes (--no-nonce)"
	}
	return "trace prefixes, shared on purpose: " + strings.Join(parts, "; ") + "; " + rest
}
