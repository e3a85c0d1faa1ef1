package workload

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/surge-bench/surge/internal/schedule"
)

// Prompts from blocks (a replayed trace with hash ids, e.g. Mooncake's).
//
// A trace entry with prompt blocks (schedule.Blocks) says which parts of
// its prompt other requests share: block i holds its tokens
// [i·B, (i+1)·B), and blocks with the same hash id have the same content.
// The prompt is built from them:
//
//	block(h) = "[h] " + corpus text from a word start picked by h,
//	           Sizing.Bytes(B) bytes with no per-prompt overhead
//	prompt   = block(h₀) block(h₁) … cut to Sizing.Bytes(T) bytes
//
// so block(h) is the same text in every request, run and seed with that h
// (and that block size and sizing), and differs for different h (the tag
// makes sure of that; the corpus start only varies the words). There is no
// nonce in front: sharing is the point. The request's own part is made
// unique instead: the nonce "[req <seq>-<hex>] " goes where the prompt
// stops being shared with any other entry of the replayed slice — before
// block Common (Blocks.Common), or, when every block is shared, after the
// last block if the prompt is longer than its blocks (tokens the trace
// gives no id for are the request's own, cut from the corpus as any
// unique prompt's body). A prompt whose every block another entry shares
// (the same ids) gets no nonce: the trace says the two are the same
// prompt. Because the nonce mixes Seed and Salt, a request's own part
// differs between runs too; the shared blocks do not, so a server's prefix
// cache warmed by an earlier run of the same trace still holds them.
//
// PrefixTokens is Blocks.Reused: the prompt tokens in leading blocks an
// earlier entry of the slice had, what a perfect prefix cache would reuse.
//
// Building such a prompt costs one allocation and one copy, as for any
// prompt (BenchmarkGenerateBlocks).

// blockSeed picks the corpus start of each block's text.
const blockSeed = 0x626c6f636b73 // "blocks"

// blockPrompt returns the prompt of tokens intended tokens built from the
// blocks b of arrival seq (shift: the arrival's draw for its own tail),
// and its reusable prefix in tokens.
func (g *Generator) blockPrompt(seq int64, b *schedule.Blocks, tokens, shift int) (string, int) {
	n := g.cfg.Sizing.Bytes(tokens)
	blockTokens := b.Tokens
	if blockTokens <= 0 {
		blockTokens = schedule.DefaultBlockTokens
	}
	blockBytes := Sizing{TokensPerByte: g.cfg.Sizing.TokensPerByte}.Bytes(blockTokens)
	if need := bodyShift + blockBytes + 64; len(g.text) < need {
		g.text = corpusText(need)
	}
	nb := min(len(b.HashIDs), (tokens+blockTokens-1)/blockTokens)
	w := cutWriter{left: n}
	w.sb.Grow(n)
	var buf [48]byte
	nonce := func() {
		if !g.cfg.NoNonce {
			head := appendNonce(buf[:0], seq, splitmix64(g.nonce^uint64(seq)))
			w.write(head, len(head))
		}
	}
	for i := 0; i < nb && w.left > 0; i++ {
		if i == b.Common {
			nonce()
		}
		h := b.HashIDs[i]
		tag := append(strconv.AppendInt(append(buf[:0], '['), h, 10), "] "...)
		if len(tag) > blockBytes {
			tag = tag[:blockBytes]
		}
		w.write(tag, len(tag))
		start := wordStart(g.text, int(splitmix64(uint64(h)^blockSeed)%bodyShift))
		w.write(g.text[start:], blockBytes-len(tag))
	}
	if w.left > 0 {
		if b.Common >= nb { // every block shared: the nonce was not written
			nonce()
		}
		start := 0
		if !g.cfg.NoNonce {
			start = wordStart(g.text, shift)
		}
		if len(g.text) <= start+w.left {
			g.text = corpusText(start + w.left + 1)
		}
		w.write(g.text[start:], w.left)
	}
	return w.sb.String(), min(b.Reused, tokens)
}

// cutWriter writes a prompt of a fixed length: whatever is written beyond
// it is cut.
type cutWriter struct {
	sb   strings.Builder
	left int // bytes still to write
}

// write writes k bytes of text (at most what is left): the first k bytes of
// src, ended early at a rune start and padded with spaces so that no
// multi-byte character is cut. src must hold more than k bytes, or exactly
// k when they end at a rune boundary.
func (w *cutWriter) write(src []byte, k int) {
	k = min(k, w.left)
	if k <= 0 {
		return
	}
	cut := k
	for cut > 0 && cut < len(src) && !utf8.RuneStart(src[cut]) {
		cut--
	}
	w.sb.Write(src[:min(cut, len(src))])
	for range k - min(cut, len(src)) {
		w.sb.WriteByte(' ')
	}
	w.left -= k
}
