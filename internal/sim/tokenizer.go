package sim

import (
	"fmt"
	"math"
)

// The simulated tokenizer: the engine has no vocabulary, it counts bytes.
// A text of b bytes is ⌈b / BytesPerToken⌉ tokens; a chat request adds
// ChatTokensPerMessage per message (role markers and separators of the
// template) and ChatReplyPrimerTokens once (the assistant turn's header):
//
//	completions: max(1, ⌈bytes/BytesPerToken⌉)
//	chat:        Σ_messages (⌈bytes_i/BytesPerToken⌉ + 4) + 3
//
// BytesPerToken is the knob that makes the simulator's tokenizer denser or
// sparser than surge's own 4-bytes-per-token estimate, so that prompt
// calibration (package calibrate) can be tested against it.
const (
	// DefaultBytesPerToken is the simulated tokenizer's default density:
	// 4 bytes of text per token, surge's own estimate.
	DefaultBytesPerToken = 4.0
	// ChatTokensPerMessage is the template overhead counted for every chat
	// message.
	ChatTokensPerMessage = 4
	// ChatReplyPrimerTokens is the template overhead counted once per chat
	// request for the assistant turn the engine is asked to write.
	ChatReplyPrimerTokens = 3
)

// The styles of the simulator's /tokenize endpoint (Config.Tokenize).
const (
	TokenizeVLLM     = "vllm"     // POST /tokenize {"model","messages"|"prompt"} → {"count","max_model_len","tokens"}
	TokenizeLlamaCpp = "llamacpp" // POST /tokenize {"content","add_special"} → {"tokens"}
	TokenizeNone     = "none"     // no /tokenize: clients must probe
)

// TextTokens is the simulated tokenizer's count of a text of the given
// length in bytes: ⌈bytes / BytesPerToken⌉ (0 for an empty text).
func (c Config) TextTokens(bytes int) int {
	if bytes <= 0 {
		return 0
	}
	bpt := c.BytesPerToken
	if bpt <= 0 {
		bpt = DefaultBytesPerToken
	}
	// The small slack keeps exact quotients (8 / 2.5 … 10 / 2.5) from
	// rounding up on floating-point noise.
	return int(math.Ceil(float64(bytes)/bpt - 1e-9))
}

// PromptTokens counts the prompt of a request whose prompt texts are texts
// (the message contents of a chat request, or the one prompt of a
// completions request) with the simulated tokenizer; see TextTokens.
func (c Config) PromptTokens(chat bool, texts ...string) int {
	n := 0
	for _, t := range texts {
		n += c.TextTokens(len(t))
		if chat {
			n += ChatTokensPerMessage
		}
	}
	if chat {
		n += ChatReplyPrimerTokens
	}
	return max(n, 1)
}

// checkTokenizer validates the tokenizer settings.
func (c *Config) checkTokenizer() (field, msg string) {
	switch {
	case !(c.BytesPerToken >= 0.25 && c.BytesPerToken <= 64):
		return "bytes_per_token", fmt.Sprintf("must be in [0.25, 64] bytes of text per token, got %v", c.BytesPerToken)
	case c.Tokenize != TokenizeVLLM && c.Tokenize != TokenizeLlamaCpp && c.Tokenize != TokenizeNone:
		return "tokenize", fmt.Sprintf("must be %s, %s or %s, got %q", TokenizeVLLM, TokenizeLlamaCpp, TokenizeNone, c.Tokenize)
	}
	return "", ""
}
