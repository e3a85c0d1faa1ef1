package workload

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/surge-bench/surge/internal/schedule"
)

// blockArrivals lays out entries (prompt tokens and hash ids) as a trace
// slice in blocks of 512 tokens does and returns their arrivals.
func blockArrivals(t testing.TB, entries ...schedule.TraceEntry) []schedule.Arrival {
	t.Helper()
	tr := (&schedule.Trace{Name: "t", Entries: entries}).Slice(0, 0, 512)
	out := make([]schedule.Arrival, len(tr.Entries))
	for i, e := range tr.Entries {
		out[i] = schedule.Arrival{Seq: int64(i), PromptTokens: e.PromptTokens, OutputTokens: 16, Blocks: e.Blocks}
	}
	return out
}

func entry(tokens int, ids ...int64) schedule.TraceEntry {
	return schedule.TraceEntry{PromptTokens: tokens, Blocks: &schedule.Blocks{HashIDs: ids}}
}

const blockBytes = 512 * BytesPerToken // a block of the zero Sizing

// Two entries that share their first k hash ids share the first k blocks
// of their prompts byte for byte and differ after them; the later one's
// PrefixTokens is those k blocks.
func TestBlockPromptsShareLeadingBlocks(t *testing.T) {
	arr := blockArrivals(t, entry(2000, 10, 11, 12, 13), entry(2000, 10, 11, 12, 99), entry(700, 10, 7))
	g := newGen(t, ProfileChat, nil)
	a, b, c := g.Generate(arr[0]), g.Generate(arr[1]), g.Generate(arr[2])
	for _, r := range []Request{a, b} {
		if len(r.Prompt) != 2000*BytesPerToken || !utf8.ValidString(r.Prompt) {
			t.Fatalf("prompt of %d bytes (valid UTF-8 %v), want %d", len(r.Prompt), utf8.ValidString(r.Prompt), 2000*BytesPerToken)
		}
	}
	const k = 3
	if a.Prompt[:k*blockBytes] != b.Prompt[:k*blockBytes] {
		t.Errorf("the first %d blocks differ", k)
	}
	if a.Prompt[k*blockBytes:] == b.Prompt[k*blockBytes:] {
		t.Error("the tails after the shared blocks are the same")
	}
	if a.Prompt[k*blockBytes:k*blockBytes+blockBytes/2] == b.Prompt[k*blockBytes:k*blockBytes+blockBytes/2] {
		t.Error("the blocks after the shared ones start alike")
	}
	if a.Prompt[:blockBytes] != c.Prompt[:blockBytes] || a.Prompt[blockBytes:len(c.Prompt)] == c.Prompt[blockBytes:] {
		t.Error("a third entry sharing one block shares exactly one")
	}
	if strings.HasPrefix(a.Prompt, "[req ") || !strings.HasPrefix(a.Prompt, "[10] ") {
		t.Errorf("a shared prompt starts with %q, want its first block's tag and no nonce", a.Prompt[:8])
	}
	// The nonce goes where the prompt is no longer shared.
	if !strings.HasPrefix(a.Prompt[k*blockBytes:], "[req 0-") || !strings.HasPrefix(b.Prompt[k*blockBytes:], "[req 1-") {
		t.Errorf("tails start %q, %q; want the nonces", a.Prompt[k*blockBytes:k*blockBytes+8], b.Prompt[k*blockBytes:k*blockBytes+8])
	}
	if a.PrefixTokens != 0 || b.PrefixTokens != k*512 || c.PrefixTokens != 512 {
		t.Errorf("PrefixTokens = %d, %d, %d; want 0, %d, 512", a.PrefixTokens, b.PrefixTokens, c.PrefixTokens, k*512)
	}
}

// A block's text depends on its hash id only: the same under another seed
// and salt (another run), different for another id; the request's own part
// changes with the salt.
func TestBlockTextIsAFunctionOfTheID(t *testing.T) {
	arr := blockArrivals(t, entry(1500, 1, 2, 3), entry(1500, 1, 2, 4))
	g1 := newGen(t, ProfileChat, nil)
	g2 := newGen(t, ProfileRAG, func(c *Config) { c.Seed, c.Salt = 99, 7 })
	a1, a2 := g1.Generate(arr[0]), g2.Generate(arr[0])
	if a1.Prompt[:2*blockBytes] != a2.Prompt[:2*blockBytes] {
		t.Error("shared blocks differ between runs")
	}
	if a1.Prompt[2*blockBytes:] == a2.Prompt[2*blockBytes:] {
		t.Error("the request's own part is the same under another seed and salt")
	}
	if a1.Prompt[:blockBytes/2] == a1.Prompt[blockBytes:blockBytes+blockBytes/2] {
		t.Error("blocks 1 and 2 have the same text")
	}
	if again := g1.Generate(arr[0]); again.Prompt != a1.Prompt {
		t.Error("Generate is not deterministic for block prompts")
	}
}

// Entries with the same ids are the same prompt (no nonce: the trace says
// so); a prompt longer than its ids has its own tail, nonce first.
func TestBlockPromptsIdenticalAndTail(t *testing.T) {
	arr := blockArrivals(t, entry(1024, 5, 6), entry(1024, 5, 6), entry(1400, 8), entry(1400, 8))
	g := newGen(t, ProfileChat, nil)
	r := make([]Request, len(arr))
	for i := range arr {
		r[i] = g.Generate(arr[i])
	}
	if r[0].Prompt != r[1].Prompt || strings.Contains(r[0].Prompt, "[req ") {
		t.Error("entries with the same ids and length are not the same prompt without a nonce")
	}
	if r[1].PrefixTokens != 1024 {
		t.Errorf("PrefixTokens of the repeat = %d, want 1024", r[1].PrefixTokens)
	}
	if r[2].Prompt[:blockBytes] != r[3].Prompt[:blockBytes] || !strings.HasPrefix(r[3].Prompt[blockBytes:], "[req 3-") || r[2].Prompt[blockBytes:] == r[3].Prompt[blockBytes:] {
		t.Error("tokens beyond the ids are not each request's own, behind its nonce")
	}
	if r[3].PrefixTokens != 512 {
		t.Errorf("PrefixTokens = %d, want 512 (the one block)", r[3].PrefixTokens)
	}
}

// With a calibrated Sizing blocks are Sizing-sized (no per-prompt
// overhead) and the prompt still has exactly Sizing.Bytes(T) bytes, valid
// UTF-8; --no-nonce drops the nonce.
func TestBlockPromptSizing(t *testing.T) {
	arr := blockArrivals(t, entry(3000, 1, 2, 3, 4, 5, 6), entry(3000, 1, 2, 3, 40, 50, 60), entry(100, 70))
	sz := Sizing{TokensPerByte: 0.3, Overhead: 7}
	bb := Sizing{TokensPerByte: 0.3}.Bytes(512)
	g := newGen(t, ProfileChat, func(c *Config) { c.Sizing = sz })
	a, b, c := g.Generate(arr[0]), g.Generate(arr[1]), g.Generate(arr[2])
	for _, r := range []Request{a, b, c} {
		if len(r.Prompt) != sz.Bytes(r.PromptTokens) || !utf8.ValidString(r.Prompt) {
			t.Errorf("prompt of %d bytes (valid %v), want %d", len(r.Prompt), utf8.ValidString(r.Prompt), sz.Bytes(r.PromptTokens))
		}
	}
	if a.Prompt[:3*bb] != b.Prompt[:3*bb] || a.Prompt[3*bb:4*bb] == b.Prompt[3*bb:4*bb] {
		t.Error("calibrated blocks are not shared exactly")
	}
	gn := newGen(t, ProfileChat, func(c *Config) { c.NoNonce = true })
	if p := gn.Generate(arr[0]).Prompt; strings.Contains(p, "[req ") {
		t.Error("--no-nonce prompt has a nonce")
	}
}

// BenchmarkGenerateBlocks is BenchmarkGenerate for arrivals of a Mooncake
// trace: 6,955 prompt tokens in 14 blocks of 512, the first 10 shared; and,
// for comparison, the same length as one unique prompt.
func BenchmarkGenerateBlocks(b *testing.B) {
	ids := make([]int64, 14)
	other := make([]int64, 14)
	for i := range ids {
		ids[i], other[i] = int64(46+i), int64(46+i)
		if i >= 10 {
			other[i] += 1000
		}
	}
	arr := blockArrivals(b, entry(6955, ids...), entry(6955, other...))
	for _, bc := range []struct {
		name   string
		blocks bool
	}{{"blocks", true}, {"unique", false}} {
		b.Run(bc.name, func(b *testing.B) {
			g := newGen(b, ProfileChat, nil)
			var bytes int
			seq := int64(0)
			b.ReportAllocs()
			for b.Loop() {
				a := arr[seq&1]
				a.Seq = seq
				if !bc.blocks {
					a.Blocks = nil
				}
				bytes += len(g.Generate(a).Prompt)
				seq++
			}
			b.ReportMetric(float64(bytes)/float64(b.N), "prompt-bytes/op")
		})
	}
}
