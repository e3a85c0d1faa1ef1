package workload

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
)

// words is the fixed vocabulary of synthetic prompts: everyday English with
// some technical terms, numbers and rarer words, chosen so that real BPE
// tokenizers (cl100k, o200k) see about BytesPerToken bytes per token in the
// text built from it (see the package doc for the measurement).
var words = [...]string{
	"the", "of", "and", "to", "in", "is", "that", "for", "it", "as",
	"was", "with", "be", "by", "on", "not", "he", "this", "are", "or",
	"his", "from", "at", "which", "but", "have", "an", "had", "they", "you",
	"were", "their", "one", "all", "we", "can", "her", "has", "there", "been",
	"if", "more", "when", "will", "would", "who", "so", "no", "time", "people",
	"water", "river", "see", "village", "market", "winter", "summer", "garden", "window", "letter",
	"history", "science", "use", "number", "system", "process", "service", "request", "model", "server",
	"queue", "batch", "token", "cache", "memory", "network", "latency", "my", "deadline", "capacity",
	"quickly", "slowly", "how", "often", "never", "always", "nor", "nearly", "almost", "rather",
	"bright", "quiet", "heavy", "narrow", "ancient", "modern", "simple", "careful", "strange", "gentle",
	"explain", "too", "compare", "measure", "own", "new", "follow", "gather", "arrive", "decide",
	"way", "answer", "example", "problem", "reason", "result", "method", "report", "chapter", "figure",
	"kubernetes", "autoscaler", "quantization", "yet", "prefill", "decoding", "backpressure", "idempotent", "me", "yes",
	"photosynthesis", "archipelago", "chrysanthemum", "onomatopoeia", "serendipity", "labyrinthine", "quintessential", "juxtaposition", "ephemeral", "mellifluous",
	"Zanzibar", "Reykjavik", "Ouagadougou", "Kyrgyzstan", "Tegucigalpa", "Antananarivo", "Llanfair", "Wrocław", "Þingvellir", "Nuuk",
	"1987", "2048", "3.14159", "42", "0.5", "17", "365", "1024", "99.9", "7",
	"e.g.", "i.e.", "etc.", "vs.", "approx.", "(see below)", "[1]", "[2]", "§4", "#12",
	"well-known", "long-term", "state-of-the-art", "so-called", "up-to-date", "real-time", "high-level", "day-to-day", "low-latency", "end-to-end",
	"colour", "day", "out", "theatre", "via", "up", "did", "any", "centre", "us",
	"two", "arrival", "baseline", "recovery", "warmup", "burst", "goodput", "replica", "gateway", "engine",
	"off", "because", "however", "may", "our", "its", "get", "do", "per", "unless",
	"bicycle", "lantern", "harbour", "compass", "blanket", "orchard", "meadow", "pebble", "thunder", "glacier",
	"quietly", "sudden", "golden", "silver", "wooden", "broken", "hidden", "frozen", "distant", "hollow",
	"forty", "seven", "few", "now", "dozen", "twice", "half", "third", "ago", "zero",
	"he said", "she asked", "they noted", "we found", "it seems", "as shown", "in short", "at last", "for now", "by then",
	"café", "naïve", "façade", "résumé", "déjà", "jalapeño", "smörgåsbord", "crème", "über", "piñata",
}

// corpus is an endless, deterministic English-like text built from words:
// sentences of 6 to 17 words, the first capitalised, commas after some
// words, ending with ". ". Text already produced never changes, so any
// prefix of the corpus is stable.
type corpus struct {
	text []byte
	rng  *rand.Rand
}

// corpusSeed fixes the corpus: every generator, whatever its seed, draws
// prompt bodies from the same text.
const corpusSeed = 0x5eed_c0de_7e47

func newCorpus() *corpus {
	return &corpus{rng: rand.New(rand.NewPCG(corpusSeed, corpusSeed^0x9e3779b97f4a7c15))}
}

// grow extends the text to at least n bytes.
func (c *corpus) grow(n int) {
	if n <= len(c.text) {
		return
	}
	if cap(c.text) < n {
		t := make([]byte, len(c.text), n+n/4+256)
		copy(t, c.text)
		c.text = t
	}
	for len(c.text) < n {
		c.sentence()
	}
}

// sentence appends one sentence.
func (c *corpus) sentence() {
	n := 6 + c.rng.IntN(12)
	for i := range n {
		w := words[c.rng.IntN(len(words))]
		if i == 0 && w[0] >= 'a' && w[0] <= 'z' {
			c.text = append(c.text, w[0]-'a'+'A')
			c.text = append(c.text, w[1:]...)
		} else {
			c.text = append(c.text, w...)
		}
		switch {
		case i == n-1:
			c.text = append(c.text, ". "...)
		case c.rng.IntN(8) == 0:
			c.text = append(c.text, ", "...)
		default:
			c.text = append(c.text, ' ')
		}
	}
}

// The corpus is shared by all generators: it only grows, and bytes already
// published never change (growth appends beyond every published length, or
// copies to a new array), so readers need no lock.
var (
	sharedMu     sync.Mutex
	sharedCorpus *corpus
	sharedText   atomic.Pointer[[]byte]
)

// corpusText returns the corpus text, at least n bytes of it. The result
// must not be modified.
func corpusText(n int) []byte {
	if t := sharedText.Load(); t != nil && len(*t) >= n {
		return *t
	}
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if sharedCorpus == nil {
		sharedCorpus = newCorpus()
	}
	sharedCorpus.grow(n)
	t := sharedCorpus.text
	sharedText.Store(&t)
	return t
}
