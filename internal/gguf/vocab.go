package gguf

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"unicode/utf8"
)

// spaceMark is SentencePiece's marker for a leading space.
const spaceMark = "▁"

// commonWords become whole pieces ("▁word"), so English prompts tokenize at
// roughly one token per common word, as with real tokenizers.
var commonWords = strings.Fields(`
the of and to in is that for it as was with be by on not he this are or his
from at which but have an had they you were their one all we can her has there
been if more when will would who so no time people water river see village
market winter summer garden window letter history science use number system
process service request model server queue batch token cache memory network
latency my deadline capacity quickly slowly how often never always nearly
almost rather bright quiet heavy narrow ancient modern simple careful strange
gentle explain too compare measure own new follow gather arrive decide way
answer example problem reason result method report chapter figure yet me yes
day out via up did any us two arrival baseline recovery burst engine off
because however may our its get do per unless bicycle lantern harbour compass
blanket orchard meadow pebble thunder glacier sudden golden silver wooden
broken hidden frozen distant hollow forty seven few now dozen twice half third
ago zero said asked noted found seems shown short last then about after also
back before between both could down even first good great here just know like
long make many most much must never only other over same should some still
such take than them these thing think those through under very want well what
where while work world year your again against around because begin being
below call change close come country different does during each early end
every face fact family far feel few find give group hand head help high home
house idea important keep kind large later leave left life light line little
live look made might mind move name need next night open order part place
plan point power present program public question read real right room run
school seem set show side small something sound start state story study take
tell test thought together turn until upon value water week while white whole
why word write young
`)

// Syllable parts for pseudo-words.
var (
	onsets = []string{"b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "z",
		"br", "ch", "cl", "cr", "dr", "fl", "gr", "pl", "pr", "sh", "sl", "st", "th", "tr", ""}
	nuclei = []string{"a", "e", "i", "o", "u", "ai", "ea", "ee", "ou", "oo", "ia", "y"}
	codas  = []string{"", "", "", "n", "r", "s", "t", "l", "m", "nd", "st", "ng", "rk", "x", "ck"}
)

// singleChars are pieces of one character (besides spaceMark).
const singleChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,!?'\"-:;()/"

// buildVocab returns n tokens with their scores and types: the special and
// byte tokens at the ids of the TokenID* constants, then word-like pieces.
// Every piece's prefixes are pieces too, so SentencePiece merging can reach
// it; a piece's score is its length in runes minus its index/n.
func buildVocab(n int, rng *rand.Rand) ([]string, []float32, []TokenType) {
	tokens := make([]string, 0, n)
	types := make([]TokenType, 0, n)
	seen := make(map[string]bool, n)
	special := func(s string, t TokenType) {
		tokens = append(tokens, s)
		types = append(types, t)
		seen[s] = true
	}
	special("<unk>", TokenUnknown)
	special("<s>", TokenControl)
	special("</s>", TokenControl)
	for b := range 256 {
		special(fmt.Sprintf("<0x%02X>", b), TokenByte)
	}
	special("<|im_start|>", TokenControl)
	special("<|im_end|>", TokenControl)

	// piece adds s and its prefixes (shortest first) until the vocabulary
	// is full.
	piece := func(s string) {
		for i := range len(s) + 1 {
			if len(tokens) == n {
				return
			}
			p := s[:i]
			if p == "" || !utf8.ValidString(p) || seen[p] {
				continue
			}
			seen[p] = true
			tokens = append(tokens, p)
			types = append(types, TokenNormal)
		}
	}
	piece(spaceMark)
	for _, c := range singleChars {
		piece(string(c))
	}
	for _, c := range singleChars[:62] { // letters and digits
		piece(spaceMark + string(c))
	}
	for _, w := range commonWords {
		piece(spaceMark + w)
	}
	for _, w := range commonWords[:64] {
		piece(spaceMark + strings.ToUpper(w[:1]) + w[1:])
	}
	pick := func(s []string) string { return s[rng.IntN(len(s))] }
	for len(tokens) < n {
		var b strings.Builder
		for range 1 + rng.IntN(3) {
			b.WriteString(pick(onsets))
			b.WriteString(pick(nuclei))
			b.WriteString(pick(codas))
		}
		w := b.String()
		if rng.IntN(3) == 0 {
			piece(w) // a word-internal piece, glued to the previous one
		} else {
			piece(spaceMark + w)
		}
	}

	scores := make([]float32, n)
	for i, t := range tokens {
		if types[i] == TokenNormal {
			scores[i] = float32(utf8.RuneCountInString(t)) - float32(i)/float32(n)
		}
	}
	return tokens, scores, types
}
