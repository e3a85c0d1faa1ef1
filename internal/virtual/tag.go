package virtual

import (
	"github.com/surge-bench/surge/internal/record"
	"github.com/surge-bench/surge/internal/workload"
)

// tag is what a record needs of its request: max_tokens and the workload
// labels (profile, dataset row, session, turn, branch, shared prefix),
// without the prompt or the messages. A virtual run keeps one per arrival
// until the records are made — 48 bytes, where a Request would keep its
// text alive — so a run of a million requests stays small.
type tag struct {
	profile string
	session int64
	maxTok  int32 // max_tokens; −n for an embeddings or rerank request of n inputs, which asks for none
	row     int32
	turn    int32
	branch  int32
	prefix  int32
	turns   int32 // the session's planned turns
}

func tagOf(r *workload.Request) tag {
	t := tag{profile: r.Profile, session: r.Session, maxTok: int32(r.MaxTokens), row: int32(r.DatasetRow),
		turn: int32(r.Turn), branch: int32(r.Branch), prefix: int32(r.PrefixTokens), turns: int32(r.SessionTurns)}
	if r.Inputs != nil {
		t.maxTok = -int32(len(r.Inputs))
	}
	return t
}

// maxTokens is the request's max_tokens (0 for an inputs request).
func (t *tag) maxTokens() int { return max(int(t.maxTok), 0) }

// inputs is the texts of an embeddings or rerank request; 0 otherwise.
func (t *tag) inputs() int { return max(-int(t.maxTok), 0) }

// label copies the labels into rec as the live client's records get them:
// through Request.Label.
func (t *tag) label(rec *record.Record) {
	r := workload.Request{Profile: t.profile, DatasetRow: int(t.row), Session: t.session, Turn: int(t.turn),
		Branch: int(t.branch), PrefixTokens: int(t.prefix), SessionTurns: int(t.turns)}
	r.Label(rec)
}
