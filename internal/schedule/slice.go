package schedule

import (
	"sort"
	"time"
)

// DefaultBlockTokens is the prompt tokens per hash id of a Mooncake trace
// (its published traces use blocks of 512 tokens).
const DefaultBlockTokens = 512

// MinBlockTokens is the smallest block size a trace may be read with.
const MinBlockTokens = 16

// Blocks is a trace entry's prompt as a sequence of blocks of shared
// content (a Mooncake trace's hash_ids): block i holds prompt tokens
// [i·Tokens, (i+1)·Tokens), the last one may be partial, and two blocks
// with the same id have the same content. Like a prefix cache, surge
// counts a block as shared only after the same blocks: entries share the
// prefix made of their longest common leading run of ids. (Mooncake's ids
// hash a block together with everything before it, so there an id seen
// before is always such a prefix.)
type Blocks struct {
	// HashIDs are the block ids in prompt order (a sub-slice of one array
	// per trace; never modified).
	HashIDs []int64
	// Tokens is the block size in tokens (Slice sets it; 0 before).
	Tokens int
	// Common is how many leading blocks some other entry of the replayed
	// slice has too: up to there the prompt is shared, from there on it is
	// this entry's own (the workload puts its unique nonce there).
	Common int
	// Reused is the prompt tokens in leading blocks that an earlier entry
	// of the slice had: what a perfect prefix cache (unbounded, never
	// evicting, empty when the slice starts) would reuse.
	Reused int
}

// Slice returns the part of t from offset on, for window (0: to the end),
// rebased so that offset plays at 0: the entries with
// offset ≤ Offset < offset + window, their offsets minus offset. Prompt blocks (Blocks) are
// laid out in blocks of blockTokens tokens (0: DefaultBlockTokens) and
// compared within the slice (Common, Reused). t is not modified; the
// result shares its hash ids. When the trace goes on past the window, the
// slice's Span is the window (÷ speed), not its last arrival; a window
// that reaches past the trace's last arrival is the rest of the trace.
func (t *Trace) Slice(offset, window time.Duration, blockTokens int) *Trace {
	if blockTokens <= 0 {
		blockTokens = DefaultBlockTokens
	}
	lo := sort.Search(len(t.Entries), func(i int) bool { return t.Entries[i].Offset >= offset })
	hi := len(t.Entries)
	if window > 0 {
		hi = lo + sort.Search(len(t.Entries)-lo, func(i int) bool { return t.Entries[lo+i].Offset-offset >= window })
	}
	out := *t
	out.Offset, out.Window = offset, window
	out.cut = window > 0 && hi < len(t.Entries) // an arrival at or past the window's end
	out.Entries = make([]TraceEntry, hi-lo)
	copy(out.Entries, t.Entries[lo:hi])
	for i := range out.Entries {
		out.Entries[i].Offset -= offset
	}
	layBlocks(out.Entries, blockTokens)
	return &out
}

// last returns the offset of the last entry (0 for none).
func (t *Trace) last() time.Duration {
	if len(t.Entries) == 0 {
		return 0
	}
	return t.Entries[len(t.Entries)-1].Offset
}

// layBlocks gives every entry with hash ids fresh Blocks of blockTokens
// tokens and fills Common and Reused. Only the blocks that hold prompt
// tokens count (⌈PromptTokens/blockTokens⌉ of them; extra ids are
// ignored).
//
// The blocks form a trie, each node a run of leading ids: pass 1 counts
// the entries through each node; pass 2 walks the entries in time order,
// Common being the leading nodes that more than one entry passes through
// and Reused the tokens of leading nodes an earlier entry reached (in a
// partial last block only as many tokens as the earlier entry had there).
func layBlocks(entries []TraceEntry, blockTokens int) {
	n := 0
	for i := range entries {
		if entries[i].Blocks != nil {
			n++
		}
	}
	if n == 0 {
		return
	}
	blocks := make([]Blocks, 0, n)
	type key struct {
		parent int32
		id     int64
	}
	children := map[key]int32{}
	var count, seen []int32 // per node: entries through it; most tokens an entry so far had in it
	var path []int32        // the nodes of every entry's blocks, in order
	starts := make([]int, 0, n)
	for i := range entries {
		e := &entries[i]
		if e.Blocks == nil {
			continue
		}
		nb := min(len(e.Blocks.HashIDs), (e.PromptTokens+blockTokens-1)/blockTokens)
		starts = append(starts, len(path))
		parent := int32(-1)
		for _, id := range e.Blocks.HashIDs[:nb] {
			k := key{parent, id}
			node, ok := children[k]
			if !ok {
				node = int32(len(count))
				children[k] = node
				count, seen = append(count, 0), append(seen, 0)
			}
			count[node]++
			path = append(path, node)
			parent = node
		}
		blocks = append(blocks, Blocks{HashIDs: e.Blocks.HashIDs, Tokens: blockTokens})
		e.Blocks = &blocks[len(blocks)-1]
	}
	starts = append(starts, len(path))
	j := 0
	for i := range entries {
		e := &entries[i]
		if e.Blocks == nil {
			continue
		}
		nodes := path[starts[j]:starts[j+1]]
		j++
		b := e.Blocks
		for b.Common < len(nodes) && count[nodes[b.Common]] > 1 {
			b.Common++
		}
		for k, node := range nodes {
			if seen[node] == 0 {
				break
			}
			b.Reused += min(int(seen[node]), blockTokensAt(e.PromptTokens, blockTokens, k))
		}
		for k, node := range nodes {
			seen[node] = max(seen[node], int32(blockTokensAt(e.PromptTokens, blockTokens, k)))
		}
	}
}

// blockTokensAt is how many of a prompt's tokens lie in its block k.
func blockTokensAt(prompt, blockTokens, k int) int {
	return max(0, min(blockTokens, prompt-k*blockTokens))
}

// BlockMismatch counts the entries whose hash ids do not match their
// prompt length in blocks of the slice's block size: fewer or more than
// ⌈PromptTokens/Tokens⌉ ids (a wrong --trace-block-tokens, most likely).
func (t *Trace) BlockMismatch() int {
	n := 0
	for _, e := range t.Entries {
		if b := e.Blocks; b != nil && b.Tokens > 0 && len(b.HashIDs) != (e.PromptTokens+b.Tokens-1)/b.Tokens {
			n++
		}
	}
	return n
}

// PrefixTokens sums, over the first n entries, the prompt tokens and the
// reused ones (Blocks.Reused): the share of prompt tokens a perfect prefix
// cache would serve. Entries without blocks count only in prompt.
func (t *Trace) PrefixTokens(n int) (prompt, reused int64) {
	for _, e := range t.Entries[:min(n, len(t.Entries))] {
		prompt += int64(e.PromptTokens)
		if e.Blocks != nil {
			reused += int64(min(e.Blocks.Reused, e.PromptTokens))
		}
	}
	return prompt, reused
}

// Replayed is how many entries of its trace a replay phase replays (those
// whose scaled offset falls inside its duration); 0 for other phases.
func (ph *Phase) Replayed() int {
	if ph.kind() != ArrivalReplay {
		return 0
	}
	return replayCount(ph)
}
