package run

import (
	"fmt"

	"github.com/surge-bench/surge/internal/openai"
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/workload"
)

// PrefixPlacement is where the shared prefix goes in a request: the start
// of the one user message (or of the completions prompt). vLLM and SGLang
// cache the rendered token sequence, in which the chat template puts a
// system message first, so a system message would cache alike; but some
// templates refuse a system role, and a second message would add template
// tokens that the prompt calibration did not measure.
const PrefixPlacement = "start of the user message"

// prefixAcc counts the shared prefix over a run's records (every arrival
// has one, sent or not), fed one record at a time: their intended prompt
// tokens as the generator drew them, the prefix's share of those, and the
// draws lengthened to hold it. Nil without a shared prefix.
type prefixAcc struct {
	sp       *record.SharedPrefix
	gen      *workload.Generator // nil: the workload does not build
	arrivals *arrivalIndex
}

func newPrefixAcc(wcfg workload.Config, arrivals *arrivalIndex) *prefixAcc {
	if wcfg.SharedPrefix <= 0 {
		return nil
	}
	p := &prefixAcc{sp: &record.SharedPrefix{Tokens: wcfg.SharedPrefix, Placement: PrefixPlacement}, arrivals: arrivals}
	if gen, err := workload.New(wcfg); err == nil {
		p.gen = gen
	}
	return p
}

func (p *prefixAcc) add(r *record.Record) {
	if p == nil || p.gen == nil {
		return
	}
	t, long := p.gen.IntendedPrompt(p.arrivals.of(r.Seq))
	p.sp.Requests++
	p.sp.PromptTokens += int64(t)
	if long {
		p.sp.Lengthened++
	}
}

func (p *prefixAcc) result() *record.SharedPrefix {
	if p == nil {
		return nil
	}
	if p.sp.PromptTokens > 0 {
		p.sp.Share = float64(p.sp.Tokens) * float64(p.sp.Requests) / float64(p.sp.PromptTokens)
	}
	return p.sp
}

// CacheState is the manifest's cache_state: the prefix reuse the workload
// implies, in words and (once the run has records, sp) numbers.
func CacheState(o *Options, sp *record.SharedPrefix) string {
	switch {
	case o.SharedPrefix > 0:
		s := fmt.Sprintf("shared prefix of %d tokens", o.SharedPrefix)
		if sp != nil && sp.Requests > 0 {
			s += fmt.Sprintf(" (%.1f%% of prompt tokens; %d of %d draws lengthened to hold it)", 100*sp.Share, sp.Lengthened, sp.Requests)
		}
		s += " at the " + PrefixPlacement
		if o.NoNonce {
			return s + ", no nonce after it: prompts share their starts beyond it; prefix caching is tested on purpose"
		}
		return s + ", then a per-request nonce: the prefix may be served from a prefix cache, the rest may not"
	case o.NoNonce:
		return "no nonce: prompts share their starts (--no-nonce); prefix caching may flatter results"
	}
	return "unique prompts: nonce first (no prefix reuse); prefix cache defeated"
}

// modelBlocks is the engine model's prefix-cache hashing of a request in
// virtual time, of the prompt as the HTTP facade would receive it: for chat
// the messages (Prompt as one user message), for completions the prompt
// (the messages' contents joined by blank lines, as the client sends
// them). Nil when the model has no prefix cache. Not safe for concurrent
// use (virtual time runs on one goroutine).
func (e *Env) modelBlocks() func(*workload.Request, []uint64) []uint64 {
	sc := e.Opts.Sim
	if !sc.PrefixCache() {
		return nil
	}
	chat := openai.Conversational(e.Opts.API)
	h := sc.NewPrefixHasher(nil)
	return func(r *workload.Request, dst []uint64) []uint64 {
		h.Reset(dst)
		switch {
		case r.Messages == nil && chat:
			h.Message("user", r.Prompt)
		case r.Messages == nil:
			h.Text(r.Prompt)
		case chat:
			for _, m := range r.Messages {
				h.Message(m.Role, m.Content)
			}
		default:
			for i, m := range r.Messages {
				if i > 0 {
					h.Text("\n\n")
				}
				h.Text(m.Content)
			}
		}
		return h.Hashes
	}
}
