package workload

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/schedule"
)

func testSessions(t *testing.T, cfg SessionConfig) *Sessions {
	t.Helper()
	p, _ := Lookup(ProfileChat)
	s, err := NewSessions(Config{Profile: p, Seed: 7}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Each turn's messages are the turn before's, its answer and one new user
// message: the context grows and shares its prefix.
func TestConversationGrows(t *testing.T) {
	turns, _ := ParseLength("5")
	s := testSessions(t, SessionConfig{Turns: turns, Think: FixedThink(time.Second)})
	c := s.Start(schedule.Arrival{Seq: 11})
	if c.Turns() != 5 {
		t.Fatalf("turns %d, want 5", c.Turns())
	}
	var prev []Message
	prevTokens := 0
	for turn := 1; turn <= 5; turn++ {
		reqs := c.Turn(turn)
		if len(reqs) != 1 {
			t.Fatalf("turn %d: %d requests, want 1", turn, len(reqs))
		}
		r := reqs[0]
		if r.Session != 12 || r.Turn != turn || r.Branch != 0 || r.SessionTurns != 5 || r.Seq != 11 {
			t.Fatalf("turn %d: labels session %d turn %d branch %d of %d seq %d", turn, r.Session, r.Turn, r.Branch, r.SessionTurns, r.Seq)
		}
		if len(r.Messages) != 2*turn-1 || r.Messages[len(r.Messages)-1].Role != "user" {
			t.Fatalf("turn %d: %d messages, want %d ending with the user's", turn, len(r.Messages), 2*turn-1)
		}
		if turn > 1 {
			if !reflect.DeepEqual(r.Messages[:len(prev)], prev) {
				t.Fatalf("turn %d does not start with turn %d's messages", turn, turn-1)
			}
			a := r.Messages[len(prev)]
			if a.Role != "assistant" || len(a.Content) != 4*30*turn {
				t.Fatalf("turn %d: answer %s of %d bytes, want assistant of %d (the reported output tokens × 4)", turn, a.Role, len(a.Content), 4*30*turn)
			}
			if r.PrefixTokens != prevTokens+30*turn || r.PromptTokens <= r.PrefixTokens {
				t.Fatalf("turn %d: prefix %d prompt %d, want prefix %d", turn, r.PrefixTokens, r.PromptTokens, prevTokens+30*turn)
			}
		} else if r.PrefixTokens != 0 || !strings.HasPrefix(r.Messages[0].Content, "[req 11-") {
			t.Fatalf("turn 1: prefix %d, or no nonce", r.PrefixTokens)
		}
		prev, prevTokens = r.Messages, r.PromptTokens
		c.Answered(turn, 30*(turn+1))
		if d := c.Think(turn + 1); d != time.Second {
			t.Fatalf("think %s", d)
		}
	}
}

func TestConversationFanout(t *testing.T) {
	s := testSessions(t, SessionConfig{Fanout: 3})
	c := s.Start(schedule.Arrival{Seq: 0})
	c.Turn(1)
	c.Answered(1, 10)
	reqs := c.Turn(2)
	if len(reqs) != 4 {
		t.Fatalf("%d requests, want 1 + 3", len(reqs))
	}
	main := reqs[0]
	seen := map[string]bool{}
	for b, r := range reqs[1:] {
		if r.Branch != b+1 || r.Turn != 2 || r.Session != 1 {
			t.Fatalf("branch %d labels %+v", b+1, r)
		}
		if !reflect.DeepEqual(r.Messages[:len(main.Messages)], main.Messages) || len(r.Messages) != len(main.Messages)+1 {
			t.Fatalf("branch %d does not extend the turn's messages by one", b+1)
		}
		if r.PrefixTokens != main.PromptTokens {
			t.Fatalf("branch %d prefix %d, want the turn's %d", b+1, r.PrefixTokens, main.PromptTokens)
		}
		task := r.Messages[len(r.Messages)-1].Content
		if seen[task] {
			t.Fatalf("branch %d repeats a sub-task", b+1)
		}
		seen[task] = true
	}
}

// Same seed and arrival, same session; another arrival, another.
func TestSessionsDeterministic(t *testing.T) {
	turns, _ := ParseLength("uniform:min=2,max=9")
	think, _ := ParseThink("uniform:min=1s,max=9s")
	run := func(seq int64) (int, []time.Duration, []Request) {
		c := testSessions(t, SessionConfig{Turns: turns, Think: think}).Start(schedule.Arrival{Seq: seq})
		var th []time.Duration
		var reqs []Request
		for turn := 1; turn <= c.Turns(); turn++ {
			reqs = append(reqs, c.Turn(turn)...)
			c.Answered(turn, 50)
			th = append(th, c.Think(turn+1))
		}
		return c.Turns(), th, reqs
	}
	n1, t1, r1 := run(3)
	n2, t2, r2 := run(3)
	if n1 != n2 || !reflect.DeepEqual(t1, t2) || !reflect.DeepEqual(r1, r2) {
		t.Fatal("the same arrival gave two sessions")
	}
	_, t3, _ := run(4)
	if reflect.DeepEqual(t1, t3) {
		t.Fatal("two arrivals gave the same think times")
	}
}

type fixedUsers struct{}

func (fixedUsers) Users(a schedule.Arrival) Users { return fixedUsers{} }
func (fixedUsers) Next(turn, branch int) (string, int) {
	return strings.Repeat("x", turn), turn
}

// A UserSource replaces the synthetic messages (a dataset's, later).
func TestSessionsUserSource(t *testing.T) {
	c := testSessions(t, SessionConfig{Users: fixedUsers{}}).Start(schedule.Arrival{})
	c.Turn(1)
	c.Answered(1, 5)
	r := c.Turn(2)[0]
	if got := r.Messages[len(r.Messages)-1].Content; got != "xx" || r.PromptTokens != r.PrefixTokens+2 {
		t.Fatalf("turn 2 user message %q (%d tokens after %d)", got, r.PromptTokens, r.PrefixTokens)
	}
}

func TestParseThink(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	cases := map[string]struct{ lo, hi time.Duration }{
		"2s":                                   {2 * time.Second, 2 * time.Second},
		"0":                                    {0, 0},
		"0s":                                   {0, 0},
		"fixed:1500ms":                         {1500 * time.Millisecond, 1500 * time.Millisecond},
		"uniform:min=1s,max=3s":                {time.Second, 3 * time.Second},
		"lognormal:median=2s,p95=20s,max=30s":  {time.Millisecond, 30 * time.Second},
		"lognormal:median=2s,sigma=0.5,max=1m": {time.Millisecond, time.Minute},
		"normal:mean=3s,sd=1s":                 {time.Millisecond, time.Hour},
	}
	for spec, want := range cases {
		th, err := ParseThink(spec)
		if err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		for range 200 {
			if d := th.Sample(rng); d < want.lo || d > want.hi {
				t.Fatalf("%s: drew %s outside [%s, %s]", spec, d, want.lo, want.hi)
			}
		}
	}
	bad := map[string]string{
		"2":                          `want a duration such as 2s or 500ms, got "2"`,
		"-1s":                        `want a duration such as 2s or 500ms, got "-1s"`,
		"uniform:min=3s,max=1s":      "uniform: max: must be >= min (3000), got 1000 (think times in ms)",
		"uniform:min=1s,max=lots":    `uniform: max: want a duration such as 2s or 500ms, got "lots"`,
		"lognormal:median=2s,p95=1s": "lognormal: p95: must be above the median (2000), got 1000 (think times in ms)",
		"zipf:a=1s":                  `unknown distribution "zipf" (want fixed, uniform, normal, lognormal or empirical) (think times in ms)`,
	}
	for spec, want := range bad {
		if _, err := ParseThink(spec); err == nil || err.Error() != want {
			t.Errorf("%s: error %v, want %s", spec, err, want)
		}
	}
}

// BenchmarkSession builds a whole default session (4 turns, chat profile):
// the generator's per-session work.
func BenchmarkSession(b *testing.B) {
	p, _ := Lookup(ProfileChat)
	s, err := NewSessions(Config{Profile: p, Seed: 7}, SessionConfig{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := range b.N {
		c := s.Start(schedule.Arrival{Seq: int64(i)})
		for turn := 1; turn <= c.Turns(); turn++ {
			c.Turn(turn)
			c.Answered(turn, 150)
			c.Think(turn + 1)
		}
	}
}

// With a ShareGPT dataset a session replays a whole conversation: as many
// turns as it has user messages, each turn sending the next one after the
// history; a system turn before the first question stays first.
func TestSessionsReplayShareGPTConversations(t *testing.T) {
	d, err := LoadDataset("testdata/dataset/sharegpt.json", FormatShareGPT)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := Lookup(ProfileChat)
	s, err := NewSessions(Config{Profile: p, Seed: 7, Dataset: d, DatasetSample: SampleSequential}, SessionConfig{})
	if err != nil {
		t.Fatal(err)
	}
	// Arrival 0 takes row 0: two questions.
	c := s.Start(schedule.Arrival{Seq: 0})
	if c.Turns() != 2 {
		t.Fatalf("turns %d, want the conversation's 2 questions", c.Turns())
	}
	t1 := c.Turn(1)[0]
	if t1.DatasetRow != 1 || len(t1.Messages) != 1 || !strings.HasSuffix(t1.Messages[0].Content, "What is the capital of Iceland, and why is it there?") {
		t.Fatalf("turn 1: row %d, messages %d", t1.DatasetRow, len(t1.Messages))
	}
	c.Answered(1, 20)
	t2 := c.Turn(2)[0]
	if t2.DatasetRow != 1 {
		t.Fatalf("turn 2: dataset row %d, want the conversation's 1", t2.DatasetRow)
	}
	if len(t2.Messages) != 3 || t2.Messages[1].Role != RoleAssistant || t2.Messages[2].Content != "How many people live there?" {
		t.Fatalf("turn 2: %d messages, want question, answer, the second question", len(t2.Messages))
	}
	if t2.PrefixTokens != t1.PromptTokens+20 || t2.PromptTokens != t2.PrefixTokens+7 {
		t.Fatalf("turn 2: prefix %d prompt %d (turn 1 prompt %d)", t2.PrefixTokens, t2.PromptTokens, t1.PromptTokens)
	}
	// Arrival 1 takes row 1: a system turn, then one question.
	c = s.Start(schedule.Arrival{Seq: 1})
	r := c.Turn(1)[0]
	if c.Turns() != 1 || len(r.Messages) != 2 || r.Messages[0].Role != RoleSystem || r.Messages[1].Role != RoleUser {
		t.Fatalf("row 2: %d turns, messages %+v", c.Turns(), len(r.Messages))
	}
}

// A session's clone of the generator keeps the mix: later turns draw
// max_tokens from the arrival's own profile.
func TestSessionsKeepTheMix(t *testing.T) {
	m, _ := ParseMix("chat=1,longgen=1")
	ws, err := m.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSessions(Config{Mix: ws, Seed: 3}, SessionConfig{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for seq := range int64(200) {
		c := s.Start(schedule.Arrival{Seq: seq})
		r := c.Turn(1)[0]
		seen[r.Profile]++
		c.Answered(1, 10)
		if r2 := c.Turn(2)[0]; r2.Profile != r.Profile {
			t.Fatalf("session %d: turn 2 profile %q, turn 1 %q", seq, r2.Profile, r.Profile)
		}
	}
	if seen[ProfileChat] < 50 || seen[ProfileLongGen] < 50 {
		t.Fatalf("profiles of first turns %v: the session's generator lost the mix", seen)
	}
}

// With a shared prefix, turn 1 keeps the Generator's prefix label (its
// prompt starts with the prefix) and later turns share their history, which
// starts with it.
func TestConversationSharedPrefix(t *testing.T) {
	p, _ := Lookup(ProfileChat)
	s, err := NewSessions(Config{Profile: p, Seed: 7, SharedPrefix: 256}, SessionConfig{Turns: FixedLength(3), Fanout: 1})
	if err != nil {
		t.Fatal(err)
	}
	c := s.Start(schedule.Arrival{Seq: 3})
	reqs := c.Turn(1)
	if reqs[0].PrefixTokens != 256 {
		t.Fatalf("turn 1: prefix %d, want the shared 256", reqs[0].PrefixTokens)
	}
	if reqs[1].PrefixTokens != reqs[0].PromptTokens {
		t.Fatalf("turn 1 branch: prefix %d, want the turn's %d", reqs[1].PrefixTokens, reqs[0].PromptTokens)
	}
	c.Answered(1, 40)
	r := c.Turn(2)[0]
	if r.PrefixTokens != reqs[0].PromptTokens+40 {
		t.Fatalf("turn 2: prefix %d, want the history's %d", r.PrefixTokens, reqs[0].PromptTokens+40)
	}
}

// A dataset row's tools and response format go with every request of its
// session: later turns and fan-out sub-requests too.
func TestSessionsCarryExtra(t *testing.T) {
	d := loadTestdata(t, "openai.jsonl", FormatOpenAIJSONL)
	p, _ := Lookup(ProfileChat)
	s, err := NewSessions(Config{Profile: p, Seed: 7, Dataset: d, DatasetSample: SampleSequential}, SessionConfig{Turns: FixedLength(3), Fanout: 2})
	if err != nil {
		t.Fatal(err)
	}
	c := s.Start(schedule.Arrival{Seq: 2}) // the row with tools
	want := string(c.first.Extra)
	if !strings.Contains(want, `"tools"`) {
		t.Fatalf("first request's extra %s, want the row's tools", want)
	}
	for turn := 1; turn <= 3; turn++ {
		reqs := c.Turn(turn)
		for b, r := range reqs {
			if string(r.Extra) != want {
				t.Fatalf("turn %d branch %d: extra %q, want the first request's", turn, b, r.Extra)
			}
		}
		c.Answered(turn, 10)
	}
}
