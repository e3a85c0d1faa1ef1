package workload

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/surge-bench/surge/internal/schedule"
)

func newGen(t testing.TB, profile string, mut func(*Config)) *Generator {
	t.Helper()
	p, err := Lookup(profile)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Profile: p, Seed: 1}
	if mut != nil {
		mut(&cfg)
	}
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func arrival(seq int64) schedule.Arrival { return schedule.Arrival{Seq: seq, Phase: "baseline"} }

func TestEstimateTokens(t *testing.T) {
	tests := []struct {
		in   string
		want int
	}{
		{"", 0}, {"a", 1}, {"abcd", 1}, {"abcde", 2}, {strings.Repeat("x", 4000), 1000}, {"héllo", 2},
	}
	for _, tc := range tests {
		if got := EstimateTokens(tc.in); got != tc.want {
			t.Errorf("EstimateTokens(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func TestGenerateRequests(t *testing.T) {
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			g := newGen(t, name, nil)
			p := g.cfg.Profile
			seen := make(map[string]bool)
			for seq := range int64(2000) {
				r := g.Generate(arrival(seq))
				if r.Seq != seq || r.Profile != name || r.IgnoreEOS {
					t.Fatalf("request %d: %+v", seq, r)
				}
				if seen[r.Prompt] {
					t.Fatalf("request %d repeats a prompt", seq)
				}
				seen[r.Prompt] = true
				// The prompt is sized by the estimate (within ±5%; exact by
				// construction) and drawn within the profile's clamp.
				est := EstimateTokens(r.Prompt)
				if est != r.PromptTokens || math.Abs(float64(est)/float64(r.PromptTokens)-1) > 0.05 {
					t.Fatalf("request %d: estimate %d vs target %d", seq, est, r.PromptTokens)
				}
				if len(r.Prompt) != BytesPerToken*r.PromptTokens {
					t.Fatalf("request %d: %d bytes for %d tokens", seq, len(r.Prompt), r.PromptTokens)
				}
				if lo, hi := promptClamp(p), p.Prompt.Upper(); r.PromptTokens < lo || r.PromptTokens > hi {
					t.Fatalf("request %d: %d prompt tokens outside [%d, %d]", seq, r.PromptTokens, lo, hi)
				}
				if r.MaxTokens < 1 || r.MaxTokens > p.MaxTokens || r.MaxTokens > p.Output.Upper() {
					t.Fatalf("request %d: max_tokens %d", seq, r.MaxTokens)
				}
				if !strings.HasPrefix(r.Prompt, fmt.Sprintf("[req %d-", seq)) {
					t.Fatalf("request %d: no nonce at the start: %.30q", seq, r.Prompt)
				}
				if !utf8.ValidString(r.Prompt) {
					t.Fatalf("request %d: invalid UTF-8", seq)
				}
			}
		})
	}
}

func promptClamp(p Profile) int {
	if p.Prompt.Kind == KindFixed {
		return p.Prompt.Value
	}
	return p.Prompt.Min
}

func TestGenerateDeterministic(t *testing.T) {
	a, b := newGen(t, ProfileChat, nil), newGen(t, ProfileChat, nil)
	// Same config: same requests, whatever the call order.
	var forward []Request
	for seq := range int64(300) {
		forward = append(forward, a.Generate(arrival(seq)))
	}
	for seq := int64(299); seq >= 0; seq-- {
		if got := b.Generate(arrival(seq)); !reflect.DeepEqual(got, forward[seq]) {
			t.Fatalf("request %d differs between generators or call orders", seq)
		}
	}
	// Another seed: different lengths.
	c := newGen(t, ProfileChat, func(c *Config) { c.Seed = 2 })
	same := 0
	for seq := range int64(300) {
		if c.Generate(arrival(seq)).PromptTokens == forward[seq].PromptTokens {
			same++
		}
	}
	if same > 30 {
		t.Errorf("seed 2 repeats %d of 300 prompt lengths of seed 1", same)
	}
	// Another salt: same lengths, different nonces.
	d := newGen(t, ProfileChat, func(c *Config) { c.Salt = 99 })
	for seq := range int64(300) {
		r := d.Generate(arrival(seq))
		if r.PromptTokens != forward[seq].PromptTokens || r.MaxTokens != forward[seq].MaxTokens {
			t.Fatalf("request %d: salt changed the lengths", seq)
		}
		if nonce(r.Prompt) == nonce(forward[seq].Prompt) {
			t.Fatalf("request %d: salt did not change the nonce %q", seq, nonce(r.Prompt))
		}
	}
}

func nonce(prompt string) string {
	n, _, _ := strings.Cut(prompt, "] ")
	return n
}

func TestGenerateNoNonceSharesPrefixes(t *testing.T) {
	g := newGen(t, ProfileChat, func(c *Config) { c.NoNonce = true })
	var prompts []string
	for seq := range int64(200) {
		r := g.Generate(arrival(seq))
		if strings.HasPrefix(r.Prompt, "[req") {
			t.Fatalf("request %d has a nonce", seq)
		}
		if EstimateTokens(r.Prompt) != r.PromptTokens {
			t.Fatalf("request %d: estimate %d vs target %d", seq, EstimateTokens(r.Prompt), r.PromptTokens)
		}
		prompts = append(prompts, r.Prompt)
	}
	for i := 1; i < len(prompts); i++ {
		x, y := prompts[0], prompts[i]
		if len(x) > len(y) {
			x, y = y, x
		}
		// Equal up to the shorter one's length, except spaces padding a cut
		// multi-byte character at its very end.
		if strings.TrimRight(x, " ") != y[:len(strings.TrimRight(x, " "))] {
			t.Fatalf("prompts 0 and %d do not share a prefix", i)
		}
	}
}

func TestGenerateUniqueBodies(t *testing.T) {
	// With the nonce on, bodies start at different words: prompts differ
	// beyond the nonce too (a cache keyed on later chunks gains little).
	g := newGen(t, ProfileChat, nil)
	starts := map[string]bool{}
	for seq := range int64(500) {
		r := g.Generate(arrival(seq))
		_, body, _ := strings.Cut(r.Prompt, "] ")
		starts[body[:16]] = true
	}
	if len(starts) < 450 { // ~10,000 word starts in 64 KiB: ~488 distinct expected
		t.Errorf("only %d distinct body starts in 500 prompts", len(starts))
	}
}

func TestGenerateReplayLengths(t *testing.T) {
	g := newGen(t, ProfileChat, func(c *Config) { c.IgnoreEOS = true })
	tests := []struct {
		name             string
		prompt, output   int
		wantProfile      string
		wantPromptTokens int // 0 = drawn
		wantMaxTokens    int // 0 = drawn
	}{
		{"both from the trace", 1234, 56, ProfileReplay, 1234, 56},
		{"output capped", 10, 5000, ProfileReplay, 10, 1024},
		{"prompt only", 777, 0, ProfileChat, 777, 0},
		{"output only", 0, 99, ProfileChat, 0, 99},
		{"tiny prompt longer than the nonce", 1, 1, ProfileReplay, 0, 1},
		{"prompt clamped", MaxPromptTokens + 10, 1, ProfileReplay, MaxPromptTokens, 1},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			seq := int64(100 + i)
			drawn := newGen(t, ProfileChat, nil).Generate(arrival(seq))
			r := g.Generate(schedule.Arrival{Seq: seq, PromptTokens: tc.prompt, OutputTokens: tc.output})
			if r.Profile != tc.wantProfile || !r.IgnoreEOS {
				t.Errorf("profile %q ignore_eos %v", r.Profile, r.IgnoreEOS)
			}
			switch want := tc.wantPromptTokens; {
			case tc.prompt == 1: // the nonce alone is longer than 4 bytes; 1 token was intended
				if !strings.HasPrefix(r.Prompt, "[req ") || r.PromptTokens != 1 {
					t.Errorf("tiny prompt %q, %d tokens", r.Prompt, r.PromptTokens)
				}
			case want == 0 && r.PromptTokens != drawn.PromptTokens:
				t.Errorf("prompt tokens %d, want the draw %d", r.PromptTokens, drawn.PromptTokens)
			case want != 0 && r.PromptTokens != want:
				t.Errorf("prompt tokens %d, want %d", r.PromptTokens, want)
			}
			if want := tc.wantMaxTokens; want == 0 && r.MaxTokens != drawn.MaxTokens || want != 0 && r.MaxTokens != want {
				t.Errorf("max tokens %d, want %d (draw %d)", r.MaxTokens, want, drawn.MaxTokens)
			}
		})
	}
}

func TestGenerateValidUTF8AtEveryLength(t *testing.T) {
	// Prompts of every length from 1 to 3000 tokens, bodies at every
	// shift, never cut a multi-byte character and keep the exact length.
	p := Profile{Name: "sweep", Prompt: Uniform(1, 3000), Output: Fixed(1), MaxTokens: 1}
	for _, noNonce := range []bool{false, true} {
		g, err := New(Config{Profile: p, NoNonce: noNonce})
		if err != nil {
			t.Fatal(err)
		}
		for tok := 1; tok <= 3000; tok++ {
			r := g.Generate(schedule.Arrival{Seq: int64(tok), PromptTokens: tok})
			if !utf8.ValidString(r.Prompt) {
				t.Fatalf("nonce=%v tokens %d: invalid UTF-8", !noNonce, tok)
			}
			if len(r.Prompt) < 4*tok || len(r.Prompt) > 4*tok && tok > 5 {
				t.Fatalf("nonce=%v tokens %d: %d bytes", !noNonce, tok, len(r.Prompt))
			}
		}
	}
}

func TestGenerateAllocations(t *testing.T) {
	// One allocation per request: the prompt string.
	g := newGen(t, ProfileRAG, nil)
	seq := int64(0)
	allocs := testing.AllocsPerRun(200, func() {
		g.Generate(arrival(seq))
		seq++
	})
	if allocs != 1 {
		t.Errorf("%v allocations per request, want 1", allocs)
	}
}

func TestNewRejectsInvalidProfile(t *testing.T) {
	_, err := New(Config{Profile: Profile{Name: "x", Prompt: Fixed(1), Output: Fixed(1)}})
	if err == nil || err.Error() != `workload: profile "x": max_tokens: must be in [1, 1048576], got 0` {
		t.Errorf("New: %v", err)
	}
}

func BenchmarkGenerate(b *testing.B) {
	for _, name := range Names() {
		b.Run(name, func(b *testing.B) {
			g := newGen(b, name, nil)
			var bytes int
			seq := int64(0)
			b.ReportAllocs()
			for b.Loop() {
				bytes += len(g.Generate(arrival(seq)).Prompt)
				seq++
			}
			b.ReportMetric(float64(bytes)/float64(b.N), "prompt-bytes/op")
		})
	}
}

func TestGeneratorsShareCorpusConcurrently(t *testing.T) {
	// Generators in parallel goroutines, with replayed prompts long enough
	// to grow the shared corpus while others read it (run with -race), give
	// the same requests as one generator alone.
	p, _ := Lookup(ProfileChat)
	arrivals := make([]schedule.Arrival, 400)
	for i := range arrivals {
		arrivals[i] = schedule.Arrival{Seq: int64(i)}
		if i%7 == 0 {
			arrivals[i].PromptTokens = 20_000 + 500*i // up to ~220k tokens, past the initial corpus
		}
	}
	// Start from an empty corpus so that the workers grow it concurrently
	// (other tests grew it; its bytes are the same whenever it is built).
	sharedMu.Lock()
	sharedCorpus = nil
	sharedText.Store(nil)
	sharedMu.Unlock()
	const workers = 4
	got := make([]Request, len(arrivals))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			g, err := New(Config{Profile: p, Seed: 3})
			if err != nil {
				t.Error(err)
				return
			}
			for i := w; i < len(arrivals); i += workers {
				got[i] = g.Generate(arrivals[i])
			}
		})
	}
	wg.Wait()
	want := make([]Request, len(arrivals))
	solo, err := New(Config{Profile: p, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range arrivals {
		want[i] = solo.Generate(a)
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Fatalf("request %d differs between concurrent and solo generation", i)
		}
	}
}

// A calibrated Sizing sizes the text for the target's tokenizer: for a
// target counting 7 + 0.4·bytes tokens, a 200-token prompt is
// (200 − 7)/0.4 = 482.5 → 483 bytes (round half away from zero), the
// intended length stays 200, and IntendedPromptTokens agrees without
// building the text.
func TestSizing(t *testing.T) {
	s := Sizing{TokensPerByte: 0.4, Overhead: 7}
	for _, tc := range []struct{ tokens, bytes int }{{200, 483}, {8, 3}, {7, 1}, {1, 1}} {
		if got := s.Bytes(tc.tokens); got != tc.bytes {
			t.Errorf("Bytes(%d) = %d, want %d", tc.tokens, got, tc.bytes)
		}
	}
	if got := (Sizing{}).Bytes(50); got != 200 {
		t.Errorf("zero Sizing: Bytes(50) = %d, want 4·50", got)
	}
	p := Profile{Name: "x", Prompt: Fixed(200), Output: Fixed(10), MaxTokens: 10}
	g, err := New(Config{Profile: p, Seed: 3, Sizing: s})
	if err != nil {
		t.Fatal(err)
	}
	r := g.Generate(schedule.Arrival{Seq: 5})
	if len(r.Prompt) != 483 || r.PromptTokens != 200 {
		t.Errorf("prompt of %d bytes, %d intended tokens; want 483 bytes, 200", len(r.Prompt), r.PromptTokens)
	}
	lp := LogNormal(300, 0.5, 32, 2048)
	g2, _ := New(Config{Profile: Profile{Name: "y", Prompt: lp, Output: Fixed(10), MaxTokens: 10}, Seed: 3})
	for seq := range int64(50) {
		a := schedule.Arrival{Seq: seq}
		if got, want := g2.IntendedPromptTokens(a), g2.Generate(a).PromptTokens; got != want {
			t.Fatalf("seq %d: IntendedPromptTokens %d, Generate %d", seq, got, want)
		}
	}
}
