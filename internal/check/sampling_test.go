package check

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// samplingStub is an engine that answers words: token i of an answer is
// word i of a list the seed shuffles (temperature > 0; an unseeded
// request gets a fresh shuffle when random), cut at max_tokens, and at
// the first stop string when honourStop. Streams one chunk per word.
type samplingStub struct {
	honourStop bool
	random     bool // temperature > 0 without a usable seed varies
	ignoreSeed bool
	calls      atomic.Int64
}

func (s *samplingStub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		MaxTokens   int      `json:"max_tokens"`
		Stream      bool     `json:"stream"`
		Stop        []string `json:"stop"`
		Seed        *uint64  `json:"seed"`
		Temperature *float64 `json:"temperature"`
	}
	json.NewDecoder(r.Body).Decode(&req)
	words := strings.Fields("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu one two three four five six seven eight nine ten")
	if req.Temperature != nil && *req.Temperature > 0 && s.random {
		seed := uint64(s.calls.Add(1)) * 7919
		if req.Seed != nil && !s.ignoreSeed {
			seed = *req.Seed
		}
		rand.New(rand.NewPCG(seed, 1)).Shuffle(len(words), func(i, j int) { words[i], words[j] = words[j], words[i] })
	}
	var toks []string
	text, finish := "", "length"
	for i := 0; i < req.MaxTokens && i < len(words); i++ {
		tok := words[i]
		if i > 0 {
			tok = " " + tok
		}
		if s.honourStop && len(req.Stop) > 0 {
			if at := strings.Index(text+tok, req.Stop[0]); at >= 0 {
				if cut := (text + tok)[len(text):at]; cut != "" {
					toks = append(toks, cut)
				}
				finish = "stop"
				break
			}
		}
		toks = append(toks, tok)
		text += tok
	}
	if !req.Stream {
		b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"index": 0, "message": map[string]any{"content": strings.Join(toks, "")}, "finish_reason": finish}},
			"usage": map[string]any{"prompt_tokens": 9, "completion_tokens": len(toks), "total_tokens": 9 + len(toks)}})
		w.Write(b)
		return
	}
	var ev []any
	for _, tk := range toks {
		ev = append(ev, contentEvent(tk, ""))
	}
	streamEvents(w, true, append(ev, contentEvent("", finish), usageEvent(9, len(toks)))...)
}

func stubT(t *testing.T, h http.Handler) *T {
	return &T{Probe: stubProbe(t, h.ServeHTTP), Config: DefaultConfig()}
}

func TestStopShapes(t *testing.T) {
	mustStatus(t, checkStop(context.Background(), stubT(t, &samplingStub{honourStop: true})), Pass, "where the ", "stop string begins; finish stop")
	mustStatus(t, checkStop(context.Background(), stubT(t, &samplingStub{})), Fail, "stop ignored: the answer (")
}

func TestPickStop(t *testing.T) {
	for _, tc := range []struct {
		text string
		at   int
		stop string
	}{
		// the first space from the middle (byte 12) on, 3 bytes
		{"alpha bravo charlie delta", 19, " de"},
		// " abc" occurs before: the stop string grows until it is unique
		{"x abcd y abce zz", 8, " abce"},
		// no space: from the middle, whole runes only
		{"数学数学の問題を解く", 15, "問"},
		// a random-weight model's answer: U+FFFD and control characters
		// are never picked
		{"2CCab?\uFFFD2C?\uFFFD2\x080V\uFFFDV\uFFFDV\uFFFDV\uFFFDV", 9, "2C?"},
		// its second half repeats: the string comes from before the
		// middle, the nearest to it
		{"xyzab\uFFFDV\uFFFDV\uFFFDV\uFFFDV\uFFFDV", 2, "zab"},
	} {
		at, stop, ok := pickStop(tc.text)
		if !ok || at != tc.at || stop != tc.stop || strings.Index(tc.text, stop) != at {
			t.Errorf("%q: %d %q %v, want %d %q", tc.text, at, stop, ok, tc.at, tc.stop)
		}
	}
	for _, text := range []string{"ab", "aaaaaaaaaaaa", "x\uFFFD\uFFFD\uFFFD\uFFFD", "abc\x00abc\x00"} {
		if at, stop, ok := pickStop(text); ok {
			t.Errorf("%q gave a stop string %q at %d", text, stop, at)
		}
	}
}

func TestJudgeStop(t *testing.T) {
	const learned = "alpha bravo charlie delta echo"
	at, stop, _ := pickStop(learned) // " delta" … at 19
	for name, tc := range map[string]struct {
		got, finish string
		status      Status
		want        string
	}{
		"stopped":        {learned[:at], "stop", Pass, fmt.Sprintf("stopped at byte %d of 30", at)},
		"ignored":        {learned, "length", Fail, "stop ignored"},
		"stop included":  {learned[:at] + stop, "stop", Fail, "holds the stop string"},
		"finish length":  {learned[:at], "length", Warn, "but finish length, not stop"},
		"stopped early":  {learned[:5], "stop", Warn, "ended at byte 5"},
		"different text": {"zulu yankee", "stop", Warn, "cannot judge: the two answers at temperature 0 differ from byte 0"},
	} {
		t.Run(name, func(t *testing.T) { mustStatus(t, judgeStop(learned, tc.got, tc.finish, at, stop), tc.status, tc.want) })
	}
}

func TestSamplingSim(t *testing.T) {
	tt := &T{Probe: simProbe(t, fastSim(), ""), Config: DefaultConfig()}
	mustStatus(t, checkTemperature0(context.Background(), tt), Pass, "identical")
	mustStatus(t, checkMaxTokens(context.Background(), tt), Pass, "max_tokens 12: 12 tokens (usage), 12 content chunks, finish length")
}

func TestTemperature0Shapes(t *testing.T) {
	mustStatus(t, checkTemperature0(context.Background(), stubT(t, &samplingStub{})), Pass, "identical")
	// A server that samples at temperature 0: a WARN, never a FAIL.
	var n atomic.Int64
	p := stubProbe(t, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"choices":[{"index":0,"message":{"content":"answer %d"},"finish_reason":"length"}]}`, n.Add(1))
	})
	mustStatus(t, checkTemperature0(context.Background(), &T{Probe: p, Config: DefaultConfig()}), Warn, "differ from byte 7")
}

func TestMaxTokensShapes(t *testing.T) {
	long := func(n int, finish string, usage bool) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			ev := wordEvents(n, finish)
			if usage {
				ev = append(ev, usageEvent(9, n))
			}
			streamEvents(w, true, ev...)
		}
	}
	for name, tc := range map[string]struct {
		h      http.HandlerFunc
		status Status
		want   string
	}{
		"honoured":       {long(12, "length", true), Pass, "max_tokens 12: 12 tokens (usage), 12 content chunks, finish length"},
		"past it":        {long(40, "length", true), Fail, "generated past max_tokens: max_tokens 12: 40 tokens (usage), 40 content chunks"},
		"past, no usage": {long(13, "stop", false), Fail, "13 content chunks"},
		"ended itself":   {long(5, "stop", true), Warn, "cannot judge: the answer ended by itself"},
		"no usage":       {long(12, "length", false), Pass, "max_tokens 12: 12 content chunks, finish length"},
	} {
		t.Run(name, func(t *testing.T) {
			mustStatus(t, checkMaxTokens(context.Background(), &T{Probe: stubProbe(t, tc.h), Config: DefaultConfig()}), tc.status, tc.want)
		})
	}
	for _, tc := range []struct {
		u, n   int
		finish string
		status Status
	}{
		{12, 12, "stop", Warn},   // exactly, but finish stop
		{12, 4, "length", Pass},  // merged chunks, usage exact
		{-1, 4, "length", Warn},  // no usage, merged: cannot count
		{13, 12, "length", Fail}, // usage says more
		{10, 10, "length", Warn},
	} {
		if r := judgeMaxTokens(12, tc.u, tc.n, tc.finish); r.Status != tc.status {
			t.Errorf("usage %d chunks %d finish %s: %s (%s), want %s", tc.u, tc.n, tc.finish, r.Status, r.Evidence, tc.status)
		}
	}
}

func TestSeedShapes(t *testing.T) {
	mustStatus(t, checkSeed(context.Background(), stubT(t, &samplingStub{random: true})), Pass, "same seed, same answer")
	mustStatus(t, checkSeed(context.Background(), stubT(t, &samplingStub{})), Warn, "sampling looks deterministic at temperature 1; seed not shown")
	mustStatus(t, checkSeed(context.Background(), stubT(t, &samplingStub{random: true, ignoreSeed: true})), Skip, "seed not honoured: the same seed gave answers that differ")
	refuse := stubProbe(t, func(w http.ResponseWriter, r *http.Request) { apiError(w, 400, "invalid_request_error") })
	mustStatus(t, checkSeed(context.Background(), &T{Probe: refuse, Config: DefaultConfig()}), Skip, "seed refused: HTTP 400")
}

// A model that thinks first: with every token of the sampling checks'
// answers spent on reasoning, they compared empty answers and passed
// (temperature0 "identical (0 bytes)", seed "deterministic").
func TestSamplingReasoningSim(t *testing.T) {
	cfg := fastSim()
	cfg.ReasoningTokens = 32
	tt := &T{Probe: simProbe(t, cfg, ""), Config: DefaultConfig()}
	ctx := context.Background()
	r := checkTemperature0(ctx, tt)
	mustStatus(t, r, Pass, "identical (", "bytes after ", "bytes of reasoning)")
	if strings.Contains(r.Evidence, "(0 bytes") {
		t.Errorf("judged an empty answer: %s", r.Evidence)
	}
	mustStatus(t, checkSeed(ctx, tt), Pass, "same seed, same answer (", "bytes of reasoning); another seed differs")
	mustStatus(t, checkStop(ctx, tt), Pass, "stop string begins; finish stop")
	mustStatus(t, checkMaxTokens(ctx, tt), Pass, "max_tokens 12: 12 tokens (usage)")
}

// A model that thinks past every bound gives no answer: a SKIP that says
// so, never a PASS on empty text.
func TestSamplingReasoningOnly(t *testing.T) {
	var maxSeen atomic.Int64
	p := stubProbe(t, func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			MaxTokens int `json:"max_tokens"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		if int64(req.MaxTokens) > maxSeen.Load() {
			maxSeen.Store(int64(req.MaxTokens))
		}
		fmt.Fprintf(w, `{"choices":[{"index":0,"message":{"content":"","reasoning":"hmm"},"finish_reason":"length"}],"usage":{"prompt_tokens":9,"completion_tokens":%d,"total_tokens":%d}}`, req.MaxTokens, req.MaxTokens+9)
	})
	tt := &T{Probe: p, Config: DefaultConfig()}
	mustStatus(t, checkTemperature0(context.Background(), tt), Skip, "answer 1 empty: ", "tokens were reasoning")
	mustStatus(t, checkSeed(context.Background(), tt), Skip, "answer 1 empty: ", "tokens were reasoning")
	if got := maxSeen.Load(); got != sampleTokens+maxThinking {
		t.Errorf("max_tokens went up to %d, want %d", got, sampleTokens+maxThinking)
	}
	empty := stubProbe(t, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"choices":[{"index":0,"message":{"content":""},"finish_reason":"length"}]}`)
	})
	mustStatus(t, checkTemperature0(context.Background(), &T{Probe: empty, Config: DefaultConfig()}), Skip, "answer 1 empty: no content and no reasoning")
}

// An endless stream (a server that ignores max_tokens and never stops) is
// cut once it is far past max_tokens and reported as max_tokens ignored,
// long before the request's timeout.
func TestEndlessStreamIsMaxTokensIgnored(t *testing.T) {
	p := stubProbe(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		for r.Context().Err() == nil {
			if _, err := fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]}\n\n"); err != nil {
				return
			}
			fl.Flush()
		}
	})
	cfg := DefaultConfig()
	cfg.Timeout = time.Hour // a timeout would hang the test: the cut must come first
	mustStatus(t, checkMaxTokens(context.Background(), &T{Probe: p, Config: cfg}), Fail, "max_tokens ignored: more than 76 content events for max_tokens 12")
}
