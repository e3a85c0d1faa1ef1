package workload

import (
	"strings"
	"testing"

	"github.com/surge-bench/surge/internal/schedule"
)

// fixedProfile is a profile whose prompts are all tokens long.
func fixedProfile(tokens int) Profile {
	return Profile{Name: "fixed", Prompt: Fixed(tokens), Output: Fixed(10), MaxTokens: 10}
}

func TestSharedPrefixStartsEveryPrompt(t *testing.T) {
	for _, sz := range []Sizing{{}, {TokensPerByte: 0.3, Overhead: 7}} {
		g, err := New(Config{Profile: fixedProfile(2500), Seed: 1, SharedPrefix: 2000, Sizing: sz})
		if err != nil {
			t.Fatal(err)
		}
		prefixBytes := sz.TextBytes(2000)
		if sz == (Sizing{}) && prefixBytes != 8000 {
			t.Fatalf("prefix of 2000 tokens: %d bytes with the zero sizing, want 8000", prefixBytes)
		}
		first := g.Generate(arrival(0))
		prefix := first.Prompt[:prefixBytes]
		if !strings.HasSuffix(prefix, "\n") || strings.Contains(prefix, "[req ") {
			t.Fatalf("prefix does not end at its newline, or holds a nonce")
		}
		seen := map[string]bool{}
		for seq := range int64(200) {
			r := g.Generate(arrival(seq))
			if r.PrefixTokens != 2000 || r.PromptTokens != 2500 {
				t.Fatalf("request %d: prefix %d, prompt %d tokens; want 2000, 2500", seq, r.PrefixTokens, r.PromptTokens)
			}
			if len(r.Prompt) != sz.Bytes(2500) {
				t.Fatalf("request %d: %d bytes, want the drawn length's %d", seq, len(r.Prompt), sz.Bytes(2500))
			}
			if r.Prompt[:prefixBytes] != prefix {
				t.Fatalf("request %d: the prompt does not start with the shared prefix", seq)
			}
			rest := r.Prompt[prefixBytes:]
			if !strings.HasPrefix(rest, "[req ") {
				t.Fatalf("request %d: the nonce does not follow the prefix: %.20q", seq, rest)
			}
			if seen[rest] {
				t.Fatalf("request %d repeats the unique part of a prompt", seq)
			}
			seen[rest] = true
		}
	}
}

func TestSharedPrefixLengthensShortDraws(t *testing.T) {
	p := Profile{Name: "u", Prompt: Dist{Kind: KindUniform, Min: 100, Max: 400}, Output: Fixed(10), MaxTokens: 10}
	g, err := New(Config{Profile: p, Seed: 3, SharedPrefix: 300, Sizing: Sizing{TokensPerByte: 0.25, Overhead: 6.5}})
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := New(Config{Profile: p, Seed: 3})
	const floor = 300 + MinUniqueTokens + 7 // ⌈6.5⌉
	lengthened := 0
	for seq := range int64(1000) {
		a := arrival(seq)
		drawn := plain.IntendedPromptTokens(a)
		got, long := g.IntendedPrompt(a)
		r := g.Generate(a)
		switch {
		case drawn < floor && (got != floor || !long):
			t.Fatalf("draw %d below %d: got %d lengthened=%v", drawn, floor, got, long)
		case drawn >= floor && (got != drawn || long):
			t.Fatalf("draw %d: got %d lengthened=%v", drawn, got, long)
		case r.PromptTokens != got:
			t.Fatalf("Generate says %d tokens, IntendedPrompt %d", r.PromptTokens, got)
		}
		if long {
			lengthened++
			if rest := len(r.Prompt) - 1200; rest < 4*MinUniqueTokens {
				t.Fatalf("a lengthened prompt keeps %d bytes after the prefix", rest)
			}
		}
	}
	// 100..322 of 100..400 are below the floor: about 74%.
	if lengthened < 650 || lengthened > 830 {
		t.Fatalf("%d of 1000 draws lengthened, want about 740", lengthened)
	}
}

func TestNoSharedPrefixByDefault(t *testing.T) {
	g := newGen(t, "chat", nil)
	r := g.Generate(arrival(5))
	if r.PrefixTokens != 0 || !strings.HasPrefix(r.Prompt, "[req 5-") {
		t.Fatalf("default request: prefix %d tokens, starts %.10q", r.PrefixTokens, r.Prompt)
	}
	if _, long := g.IntendedPrompt(schedule.Arrival{Seq: 5, PromptTokens: 1}); long {
		t.Fatal("a one-token replayed prompt was lengthened without a prefix")
	}
}

func TestSharedPrefixWithoutNonce(t *testing.T) {
	g, err := New(Config{Profile: fixedProfile(300), Seed: 1, SharedPrefix: 100, NoNonce: true})
	if err != nil {
		t.Fatal(err)
	}
	a, b := g.Generate(arrival(1)), g.Generate(arrival(2))
	if a.Prompt != b.Prompt || len(a.Prompt) != 1200 {
		t.Fatalf("without a nonce two prompts of one length differ (or have %d bytes)", len(a.Prompt))
	}
}

func TestSharedPrefixValidate(t *testing.T) {
	for _, n := range []int{-1, MaxPromptTokens} {
		if _, err := New(Config{Profile: fixedProfile(300), SharedPrefix: n}); err == nil || !strings.Contains(err.Error(), "shared prefix") {
			t.Errorf("shared prefix %d: err = %v", n, err)
		}
	}
}
