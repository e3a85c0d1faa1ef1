package workload

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/surge-bench/surge/internal/schedule"
)

// The defaults of sessions (docs/sessions.md).
const (
	DefaultSessionTurns = 4               // turns per session
	DefaultThink        = 2 * time.Second // think time before each later turn
	// DefaultTurnTokens is the length of each later user message: a
	// follow-up question, not a new document.
	DefaultTurnTokens = "lognormal:median=150,p95=400"
	// MaxFanout bounds the sub-requests of one turn.
	MaxFanout = 64
)

// SessionConfig shapes multi-turn sessions: each scheduled arrival starts
// one, whose first turn is the Generator's request for the arrival.
type SessionConfig struct {
	Turns      Length // turns per session (≥ 1); unset = DefaultSessionTurns
	Think      Think  // think time after an answer before the next turn
	TurnTokens Length // tokens of each later user message and fan-out sub-task; unset = DefaultTurnTokens
	Fanout     int    // sub-requests each turn sends beside itself, 0..MaxFanout
	// Users supplies the user messages after the first; nil = synthetic
	// text of TurnTokens lengths. A dataset's conversations can plug in
	// here.
	Users UserSource
}

// UserSource starts the supply of user messages of one session.
type UserSource interface {
	Users(a schedule.Arrival) Users
}

// Users supplies one session's user messages after its first.
type Users interface {
	// Next returns the user message of turn (≥ 2) when branch is 0, or of
	// the fan-out sub-task branch (≥ 1) of turn (≥ 1), and its intended
	// length in tokens. It is called on the session's own goroutine, in
	// turn order, the turn before its branches.
	Next(turn, branch int) (text string, tokens int)
}

// Sessions starts conversations. It is safe for concurrent use: every
// Conversation has its own generator state.
type Sessions struct {
	gen    *Generator // template, never drawn from
	cfg    SessionConfig
	turns  Dist
	tokens Dist
	seed   uint64
}

// NewSessions returns the session starter for the workload gcfg.
func NewSessions(gcfg Config, cfg SessionConfig) (*Sessions, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	g, err := New(gcfg)
	if err != nil {
		return nil, err
	}
	s := &Sessions{gen: g, cfg: cfg, turns: Fixed(DefaultSessionTurns), seed: splitmix64(uint64(gcfg.Seed) ^ 0x7475726e73)} // "turns"
	if cfg.Turns.IsSet() {
		s.turns = cfg.Turns.Dist()
	}
	if cfg.TurnTokens.IsSet() {
		s.tokens = cfg.TurnTokens.Dist()
	} else {
		s.tokens, _ = ParseDist(DefaultTurnTokens)
	}
	return s, nil
}

// Validate checks the configuration; errors name the YAML key.
func (c *SessionConfig) Validate() error {
	if c.Fanout < 0 || c.Fanout > MaxFanout {
		return fmt.Errorf("fanout: must be 0..%d, got %d", MaxFanout, c.Fanout)
	}
	if c.Turns.IsSet() {
		if d := c.Turns.Dist(); d.Upper() > 10000 {
			return errors.New("session_turns: at most 10000 turns per session")
		}
	}
	return nil
}

// Start begins the session of arrival a. Its draws (turns, think times,
// message and answer lengths) come from a stream seeded by the run's seed
// and a.Seq only, so the same seed gives the same sessions.
func (s *Sessions) Start(a schedule.Arrival) *Conversation {
	c := &Conversation{gen: s.gen.Clone(), cfg: &s.cfg, tokens: &s.tokens, a: a, session: a.Seq + 1}
	c.pcg.Seed(s.seed, splitmix64(uint64(a.Seq)))
	c.rng = rand.New(&c.pcg)
	c.turns = max(s.turns.Sample(c.rng), 1)
	c.first = c.gen.Generate(a)
	switch {
	case s.cfg.Users != nil:
		c.users = s.cfg.Users.Users(a)
	case s.gen.cfg.Dataset != nil && s.gen.cfg.Dataset.Format == FormatShareGPT:
		c.users = s.conversation(a)
	default:
		c.users = synthetic{c}
	}
	if t, ok := c.users.(interface{ Turns() int }); ok {
		c.turns = max(t.Turns(), 1)
	}
	return c
}

// Conversation is one session: its planned turns, the conversation so far
// (user messages and the answers' stand-ins) and its draws. Not safe for
// concurrent use: the session driver calls it from the session's own
// goroutine.
type Conversation struct {
	gen     *Generator
	cfg     *SessionConfig
	tokens  *Dist
	users   Users
	a       schedule.Arrival
	session int64
	turns   int
	first   Request
	pcg     rand.PCG
	rng     *rand.Rand

	history []Message
	prefix  int // intended tokens of history
	// the current turn's user message, kept until its answer is in
	user       Message
	userTokens int
}

// Turns is the number of turns the session is planned to have (≥ 1).
func (c *Conversation) Turns() int { return c.turns }

// Think draws the think time before turn (≥ 2).
func (c *Conversation) Think(turn int) time.Duration { return c.cfg.Think.Sample(c.rng) }

// Turn returns the requests of turn (1-based): the turn itself, then its
// fan-out sub-requests (Branch 1..Fanout). The turn's messages are the
// conversation so far and a new user message; turn 1's is the Generator's
// prompt for the arrival. Each sub-request shares the turn's messages and
// adds a short sub-task of its own. PrefixTokens is the intended length of
// what the request shares with others: on turn 1 the Generator's shared
// prefix, later the history (which holds that prefix); for a sub-request
// also the turn's user message. Every request carries the first request's
// Extra (a dataset row's tools, tool_choice, response_format).
func (c *Conversation) Turn(turn int) []Request {
	out := make([]Request, 1+c.cfg.Fanout)
	main := &out[0]
	if turn == 1 {
		*main = c.first
		c.user, c.userTokens = Message{Role: "user", Content: c.first.Prompt}, c.first.PromptTokens
		if m := c.first.Messages; len(m) > 0 { // a dataset's request: its last message is the user's
			c.history = append(c.history, m[:len(m)-1]...)
			c.user = m[len(m)-1]
		}
	} else {
		text, n := c.users.Next(turn, 0)
		c.user, c.userTokens = Message{Role: "user", Content: text}, n
		*main = Request{Seq: c.a.Seq, Profile: c.first.Profile, MaxTokens: c.maxTokens(), IgnoreEOS: c.first.IgnoreEOS, Extra: c.first.Extra}
	}
	main.Prompt = ""
	main.Messages = append(c.history[:len(c.history):len(c.history)], c.user)
	main.PromptTokens = c.prefix + c.userTokens
	if turn > 1 { // turn 1 keeps the Generator's shared prefix, which the history holds from then on
		main.PrefixTokens = c.prefix
	}
	c.label(main, turn, 0)
	for b := 1; b <= c.cfg.Fanout; b++ {
		text, n := c.users.Next(turn, b)
		r := &out[b]
		*r = Request{Seq: c.a.Seq, Profile: c.first.Profile, MaxTokens: c.maxTokens(), IgnoreEOS: c.first.IgnoreEOS, Extra: c.first.Extra}
		r.Messages = append(main.Messages[:len(main.Messages):len(main.Messages)], Message{Role: "user", Content: text})
		r.PrefixTokens = main.PromptTokens
		r.PromptTokens = main.PromptTokens + n
		c.label(r, turn, b)
	}
	return out
}

func (c *Conversation) label(r *Request, turn, branch int) {
	r.Session, r.Turn, r.Branch, r.SessionTurns = c.session, turn, branch, c.turns
	r.DatasetRow = c.first.DatasetRow // the conversation a dataset session replays
}

// maxTokens draws a later request's output length and caps it.
func (c *Conversation) maxTokens() int {
	p := c.gen.profile(c.a.Seq)
	return c.gen.capped(min(p.Output.Sample(c.rng), p.MaxTokens))
}

// Answered adds turn's exchange to the history: its user message and, as
// the answer, surge's synthetic text sized to outputTokens (the server's
// count; the client keeps no response text). An engine's prefix cache
// therefore matches the next turn up to this answer, which differs from
// the text the engine generated.
func (c *Conversation) Answered(turn, outputTokens int) {
	outputTokens = max(outputTokens, 1)
	answer := c.gen.Text(c.key(turn, 0, 1), c.gen.cfg.Sizing.TextBytes(outputTokens))
	c.history = append(c.history, c.user, Message{Role: "assistant", Content: answer})
	c.prefix += c.userTokens + outputTokens
}

// key names one text of the session: turn, branch and role (0 user, 1
// assistant).
func (c *Conversation) key(turn, branch, role int) uint64 {
	return splitmix64(uint64(c.session))*31 + uint64(turn)<<24 + uint64(branch)<<4 + uint64(role)
}

// synthetic is the default Users: lengths from TurnTokens, surge's text.
type synthetic struct{ c *Conversation }

func (s synthetic) Next(turn, branch int) (string, int) {
	n := s.c.tokens.Sample(s.c.rng)
	return s.c.gen.Text(s.c.key(turn, branch, 0), s.c.gen.cfg.Sizing.TextBytes(n)), n
}

// conversation is the Users of arrival a's ShareGPT conversation: turn k
// sends the conversation's k-th user message, so a session replays the
// whole conversation (as many turns as it has user messages). A fan-out
// sub-task repeats the turn's message after a short tag of its own.
func (s *Sessions) conversation(a schedule.Arrival) *datasetUsers {
	g := s.gen
	d := g.cfg.Dataset
	u := &datasetUsers{sizing: g.cfg.Sizing}
	for _, m := range d.Conversation(d.Index(g.cfg.DatasetSample, g.cfg.Seed, a.Seq)) {
		if m.Role == RoleUser {
			u.user = append(u.user, m.Content)
		}
	}
	return u
}

// datasetUsers replays the user messages of one dataset conversation.
type datasetUsers struct {
	user   []string // the conversation's user messages, in order
	sizing Sizing
}

// Turns is the number of user messages: one turn each.
func (u *datasetUsers) Turns() int { return len(u.user) }

func (u *datasetUsers) Next(turn, branch int) (string, int) {
	text := u.user[min(turn, len(u.user))-1]
	if branch > 0 {
		text = "[sub-task " + strconv.Itoa(branch) + "] " + text
	}
	// a message inside a conversation: no per-prompt overhead
	return text, Sizing{TokensPerByte: u.sizing.TokensPerByte}.Tokens(len(text))
}

// TextBytes is the length in bytes of a message of tokens intended tokens
// inside a conversation: tokens / TokensPerByte, without the per-prompt
// overhead (which a request pays once).
func (s Sizing) TextBytes(tokens int) int {
	if s.TokensPerByte <= 0 {
		return max(tokens*BytesPerToken, 1)
	}
	return int(min(max(math.Round(float64(tokens)/s.TokensPerByte), 1), float64(MaxPromptTokens)*16))
}
