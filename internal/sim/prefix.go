package sim

import (
	"math"
	"math/bits"
)

// The prefix cache (Config.PrefixCacheTokens > 0), in the manner of vLLM's
// automatic prefix caching. A prompt is cut into blocks of
// prefix_block_tokens tokens; block i's hash covers its bytes and the hash
// of block i − 1, so a block matches only if everything before it matches
// too. The engine has no tokens, so a block is BlockBytes =
// round(prefix_block_tokens × bytes_per_token) bytes of the prompt as the
// template renders it (for chat, every message's role and content; see
// PrefixHasher); only full blocks are hashed.
//
// Each replica has its own cache of at most ⌊prefix_cache_tokens /
// prefix_block_tokens⌋ blocks, evicting the least recently used. When a
// request is admitted, its leading blocks found in the replica's cache are
// its cached tokens — at most ⌊(prompt_tokens − 1) / B⌋ blocks, as vLLM
// always computes the last prompt token — and are marked used; prefill
// starts after them, so they cost no step time and no token budget. As
// prefill proceeds, each block it completes is added to the cache. The KV
// reservation is unchanged (prompt + cap): the cache saves compute, not
// memory, and is a store of its own beside kv_cache_tokens.

// PrefixHasher cuts the text of a prompt into blocks of BlockBytes bytes and
// hashes each one chained to the one before it. Write the prompt's parts in
// order (Message for each chat message, Text for a completions prompt);
// Hashes holds one hash per full block so far. Rendering is prefix-stable:
// the blocks of a conversation's first k messages are the first blocks of
// the whole conversation's. The zero value is unusable: use
// Config.NewPrefixHasher.
type PrefixHasher struct {
	size   int
	part   []byte // the block being filled
	prev   uint64 // hash of the last full block
	Hashes []uint64
}

// NewPrefixHasher returns a hasher for this configuration's block size,
// appending to dst[:0].
func (c Config) NewPrefixHasher(dst []uint64) *PrefixHasher {
	h := &PrefixHasher{size: c.BlockBytes()}
	h.Reset(dst)
	return h
}

// Reset starts a new prompt, appending its hashes to dst[:0].
func (h *PrefixHasher) Reset(dst []uint64) {
	h.part, h.prev, h.Hashes = h.part[:0], 0, dst[:0]
}

// BlockBytes is the length in bytes of one prefix-cache block:
// round(PrefixBlockTokens × BytesPerToken), at least 1.
func (c Config) BlockBytes() int {
	bpt := c.BytesPerToken
	if bpt <= 0 {
		bpt = DefaultBytesPerToken
	}
	return max(int(math.Round(float64(c.blockTokens())*bpt)), 1)
}

// Message writes one chat message: its role, a zero byte, its content and
// a zero byte.
func (h *PrefixHasher) Message(role, content string) {
	h.Text(role)
	h.Text("\x00")
	h.Text(content)
	h.Text("\x00")
}

// Text writes s.
func (h *PrefixHasher) Text(s string) {
	if len(h.part) > 0 {
		n := min(h.size-len(h.part), len(s))
		h.part = append(h.part, s[:n]...)
		s = s[n:]
		if len(h.part) < h.size {
			return
		}
		h.block(blockHash(h.prev, h.part))
		h.part = h.part[:0]
	}
	for len(s) >= h.size {
		h.block(blockHash(h.prev, s[:h.size]))
		s = s[h.size:]
	}
	h.part = append(h.part, s...)
}

// block hashes one full block after the previous one.
func (h *PrefixHasher) block(x uint64) {
	h.prev = x
	h.Hashes = append(h.Hashes, x)
}

// blockHash hashes b after the block hashed prev: four xxHash64-style lanes
// over 32-byte stripes (independent multiplications, so about 1 GB/s even
// on a busy core), then 8-byte words and the last bytes, then a final mix.
// Deterministic across runs and machines; no allocation.
func blockHash[T string | []byte](prev uint64, b T) uint64 {
	const p1, p2 = 0x9e3779b185ebca87, 0xc2b2ae3d27d4eb4f
	round := func(acc, w uint64) uint64 { return bits.RotateLeft64(acc+w*p2, 31) * p1 }
	n := uint64(len(b))
	v1, v2, v3, v4 := prev+p1+p2, prev+p2, prev, prev-p1
	for len(b) >= 32 {
		v1 = round(v1, le64(b))
		v2 = round(v2, le64(b[8:]))
		v3 = round(v3, le64(b[16:]))
		v4 = round(v4, le64(b[24:]))
		b = b[32:]
	}
	x := bits.RotateLeft64(v1, 1) + bits.RotateLeft64(v2, 7) + bits.RotateLeft64(v3, 12) + bits.RotateLeft64(v4, 18)
	for len(b) >= 8 {
		x = mix64(x ^ le64(b))
		b = b[8:]
	}
	var tail uint64
	for i := range len(b) {
		tail |= uint64(b[i]) << (8 * i)
	}
	return mix64(x ^ tail ^ n<<48)
}

// le64 reads the first 8 bytes of s as a little-endian word.
func le64[T string | []byte](s T) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// mix64 is the SplitMix64 finaliser: a bijective mix of 64 bits.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// prefixCache is one replica's LRU set of block hashes: a map into a
// doubly linked list kept in slices (no allocation per block once full).
type prefixCache struct {
	capacity   int
	index      map[uint64]int32
	key        []uint64
	prev, next []int32 // list order: head = most recently used
	head, tail int32
}

func newPrefixCache(blocks int) *prefixCache {
	return &prefixCache{capacity: blocks, index: make(map[uint64]int32), head: -1, tail: -1}
}

func (p *prefixCache) unlink(i int32) {
	if p.prev[i] >= 0 {
		p.next[p.prev[i]] = p.next[i]
	} else {
		p.head = p.next[i]
	}
	if p.next[i] >= 0 {
		p.prev[p.next[i]] = p.prev[i]
	} else {
		p.tail = p.prev[i]
	}
}

func (p *prefixCache) pushFront(i int32) {
	p.prev[i], p.next[i] = -1, p.head
	if p.head >= 0 {
		p.prev[p.head] = i
	}
	p.head = i
	if p.tail < 0 {
		p.tail = i
	}
}

// match returns how many leading blocks of hashes are cached, marking them
// used.
func (p *prefixCache) match(hashes []uint64) int {
	for n, h := range hashes {
		i, ok := p.index[h]
		if !ok {
			return n
		}
		if p.head != i {
			p.unlink(i)
			p.pushFront(i)
		}
	}
	return len(hashes)
}

// add caches h as the most recently used block, evicting the least
// recently used when full.
func (p *prefixCache) add(h uint64) {
	if i, ok := p.index[h]; ok {
		if p.head != i {
			p.unlink(i)
			p.pushFront(i)
		}
		return
	}
	var i int32
	if len(p.key) < p.capacity {
		i = int32(len(p.key))
		p.key = append(p.key, h)
		p.prev = append(p.prev, -1)
		p.next = append(p.next, -1)
	} else {
		i = p.tail
		p.unlink(i)
		delete(p.index, p.key[i])
		p.key[i] = h
	}
	p.index[h] = i
	p.pushFront(i)
}

// len is the number of cached blocks.
func (p *prefixCache) len() int { return len(p.index) }
