package gguf

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
)

// Defaults of Options: a model of about 32 M parameters (64 MB in F16) that
// Ollama on two CPU cores decodes at a few hundred tokens per second.
const (
	DefaultDim            = 512
	DefaultLayers         = 8
	DefaultHeads          = 8
	DefaultKVHeads        = 4
	DefaultFFN            = 1408
	DefaultVocab          = 8192
	DefaultContextLength  = 32768
	DefaultSuppressWeight = -1000
	DefaultName           = "surge-tiny"
	DefaultRMSEpsilon     = 1e-5
	DefaultRopeFreqBase   = 10000
)

// MinVocab is the smallest vocabulary NewModel accepts: the 261 special and
// byte tokens, the single characters, and room for some words.
const MinVocab = 512

// TokenType is a tokenizer.ggml.token_type value.
type TokenType int32

// Token types as llama.cpp defines them.
const (
	TokenNormal      TokenType = 1
	TokenUnknown     TokenType = 2
	TokenControl     TokenType = 3
	TokenUserDefined TokenType = 4
	TokenUnused      TokenType = 5
	TokenByte        TokenType = 6
)

// Token ids of the special tokens in a generated model.
const (
	TokenIDUnknown   = 0   // <unk>
	TokenIDBOS       = 1   // <s>
	TokenIDEOS       = 2   // </s>
	TokenIDFirstByte = 3   // <0x00>; <0xFF> is TokenIDFirstByte+255
	TokenIDIMStart   = 259 // <|im_start|>
	TokenIDIMEnd     = 260 // <|im_end|>
	TokenIDFirstWord = 261 // first word-like piece
)

// chatTemplate is the ChatML template stored in tokenizer.chat_template for
// tools that read it; Ollama's Modelfile TEMPLATE takes precedence.
const chatTemplate = "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"

// Options configures a generated model. A zero field means its Default*
// value, except Seed, where 0 is an ordinary seed.
type Options struct {
	Seed           uint64  // seeds every weight and the word list
	Dim            int     // embedding length d
	Layers         int     // transformer blocks
	Heads          int     // attention heads; d must be a multiple
	KVHeads        int     // key/value heads; Heads must be a multiple
	FFN            int     // feed-forward width
	Vocab          int     // tokens, at least MinVocab
	ContextLength  int     // llama.context_length (training context)
	SuppressWeight float32 // output.weight dimension 0 for never-sampled tokens; negative
	Name           string  // general.name
}

// withDefaults returns o with zero fields replaced by defaults.
func (o Options) withDefaults() Options {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.Dim, DefaultDim)
	def(&o.Layers, DefaultLayers)
	def(&o.Heads, DefaultHeads)
	def(&o.KVHeads, DefaultKVHeads)
	def(&o.FFN, DefaultFFN)
	def(&o.Vocab, DefaultVocab)
	def(&o.ContextLength, DefaultContextLength)
	if o.SuppressWeight == 0 {
		o.SuppressWeight = DefaultSuppressWeight
	}
	if o.Name == "" {
		o.Name = DefaultName
	}
	return o
}

// Validate reports the first invalid field of o after defaults are applied.
func (o Options) Validate() error {
	o = o.withDefaults()
	for _, f := range []struct {
		name string
		v    int
	}{
		{"Dim", o.Dim}, {"Layers", o.Layers}, {"Heads", o.Heads}, {"KVHeads", o.KVHeads},
		{"FFN", o.FFN}, {"Vocab", o.Vocab}, {"ContextLength", o.ContextLength},
	} {
		if f.v < 0 {
			return fmt.Errorf("gguf: options: %s is %d, must be positive", f.name, f.v)
		}
		if f.v > 1<<20 {
			return fmt.Errorf("gguf: options: %s is %d, at most %d", f.name, f.v, 1<<20)
		}
	}
	switch {
	case o.Dim%o.Heads != 0:
		return fmt.Errorf("gguf: options: Dim %d is not a multiple of Heads %d", o.Dim, o.Heads)
	case (o.Dim/o.Heads)%2 != 0:
		return fmt.Errorf("gguf: options: head dimension %d must be even (rotary embedding)", o.Dim/o.Heads)
	case o.Heads%o.KVHeads != 0:
		return fmt.Errorf("gguf: options: Heads %d is not a multiple of KVHeads %d", o.Heads, o.KVHeads)
	case o.Vocab < MinVocab:
		return fmt.Errorf("gguf: options: Vocab %d below the minimum %d", o.Vocab, MinVocab)
	case o.SuppressWeight > 0 || math.IsNaN(float64(o.SuppressWeight)) || math.Abs(float64(o.SuppressWeight)) > 65504:
		return fmt.Errorf("gguf: options: SuppressWeight %v must be negative and within F16 range", o.SuppressWeight)
	}
	return nil
}

// Model is a generated tiny llama model, ready to be written.
type Model struct {
	opts    Options
	kv      []KV
	tensors []Tensor
	types   []TokenType
}

// NewModel validates o and prepares the model's metadata and tensors. Weights
// are generated while writing (WriteTo), not held in memory.
func NewModel(o Options) (*Model, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	tokens, scores, types := buildVocab(o.Vocab, rand.New(rand.NewPCG(o.Seed, streamID("tokenizer"))))
	types32 := make([]int32, len(types))
	for i, t := range types {
		types32[i] = int32(t)
	}
	headDim := o.Dim / o.Heads
	m := &Model{opts: o, types: types}
	m.kv = []KV{
		{"general.architecture", "llama"},
		{"general.name", o.Name},
		{"general.file_type", uint32(1)}, // LLAMA_FTYPE_MOSTLY_F16
		{"general.alignment", uint32(DefaultAlignment)},
		{"llama.context_length", uint32(o.ContextLength)},
		{"llama.embedding_length", uint32(o.Dim)},
		{"llama.block_count", uint32(o.Layers)},
		{"llama.feed_forward_length", uint32(o.FFN)},
		{"llama.attention.head_count", uint32(o.Heads)},
		{"llama.attention.head_count_kv", uint32(o.KVHeads)},
		{"llama.attention.layer_norm_rms_epsilon", float32(DefaultRMSEpsilon)},
		{"llama.rope.dimension_count", uint32(headDim)},
		{"llama.rope.freq_base", float32(DefaultRopeFreqBase)},
		{"llama.vocab_size", uint32(o.Vocab)},
		{"tokenizer.ggml.model", "llama"},
		{"tokenizer.ggml.tokens", tokens},
		{"tokenizer.ggml.scores", scores},
		{"tokenizer.ggml.token_type", types32},
		{"tokenizer.ggml.bos_token_id", uint32(TokenIDBOS)},
		{"tokenizer.ggml.eos_token_id", uint32(TokenIDEOS)},
		{"tokenizer.ggml.unknown_token_id", uint32(TokenIDUnknown)},
		{"tokenizer.ggml.add_bos_token", true},
		{"tokenizer.ggml.add_eos_token", false},
		{"tokenizer.chat_template", chatTemplate},
	}

	d, kvDim, ffn, vocab := uint64(o.Dim), uint64(o.KVHeads*headDim), uint64(o.FFN), uint64(o.Vocab)
	add := func(t Tensor) { m.tensors = append(m.tensors, t) }
	add(m.matrix("token_embd.weight", d, vocab, 0.5, func(_ int, row []float32) { row[0]++ }))
	for i := range o.Layers {
		p := fmt.Sprintf("blk.%d.", i)
		add(ones(p+"attn_norm.weight", d))
		add(m.matrix(p+"attn_q.weight", d, d, 0, nil))
		add(m.matrix(p+"attn_k.weight", d, kvDim, 0, nil))
		add(m.matrix(p+"attn_v.weight", d, kvDim, 0, nil))
		add(m.matrix(p+"attn_output.weight", d, d, 0, zeroRow0))
		add(ones(p+"ffn_norm.weight", d))
		add(m.matrix(p+"ffn_gate.weight", d, ffn, 0, nil))
		add(m.matrix(p+"ffn_up.weight", d, ffn, 0, nil))
		add(m.matrix(p+"ffn_down.weight", ffn, d, 0, zeroRow0))
	}
	add(ones("output_norm.weight", d))
	add(m.matrix("output.weight", d, vocab, 0, func(tok int, row []float32) {
		if m.types[tok] != TokenNormal {
			row[0] = o.SuppressWeight
		}
	}))
	return m, nil
}

// zeroRow0 zeroes output dimension 0 of a matrix, so that its layer never
// writes to dimension 0 of the residual stream.
func zeroRow0(r int, row []float32) {
	if r == 0 {
		clear(row)
	}
}

// streamID derives a PCG stream from a name, so that each tensor's weights
// depend only on the seed and the tensor's name.
func streamID(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return h.Sum64()
}

// matrix returns an F16 tensor with dims [in, out] whose elements are uniform
// in [−a, a]; a = 0 means √3/√in (standard deviation 1/√in). edit, if not nil,
// may change each row (output index r, in elements) before it is written.
func (m *Model) matrix(name string, in, out uint64, a float64, edit func(r int, row []float32)) Tensor {
	if a == 0 {
		a = math.Sqrt(3 / float64(in))
	}
	seed := m.opts.Seed
	return Tensor{Name: name, Dims: []uint64{in, out}, Type: TypeF16, Data: func(w io.Writer) error {
		rng := rand.NewPCG(seed, streamID(name))
		row := make([]float32, in)
		buf := make([]byte, 2*in)
		scale := float32(2 * a / (1 << 24))
		for r := range int(out) {
			for c := 0; c < len(row); c += 2 {
				// Two 24-bit uniforms per draw: u×2a/2²⁴ − a ∈ [−a, a).
				x := rng.Uint64()
				row[c] = float32(x>>40)*scale - float32(a)
				if c+1 < len(row) {
					row[c+1] = float32(x>>8&(1<<24-1))*scale - float32(a)
				}
			}
			if edit != nil {
				edit(r, row)
			}
			for c, v := range row {
				binary.LittleEndian.PutUint16(buf[2*c:], F16(v))
			}
			if _, err := w.Write(buf); err != nil {
				return err
			}
		}
		return nil
	}}
}

// ones returns an F32 vector of n ones (an RMS-norm weight).
func ones(name string, n uint64) Tensor {
	return Tensor{Name: name, Dims: []uint64{n}, Type: TypeF32, Data: func(w io.Writer) error {
		buf := make([]byte, 4*n)
		for i := range n {
			binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(1))
		}
		_, err := w.Write(buf)
		return err
	}}
}

// Options returns the model's options with defaults applied.
func (m *Model) Options() Options { return m.opts }

// KV returns the model's metadata in file order.
func (m *Model) KV() []KV { return m.kv }

// TokenTypes returns the type of every token, indexed by token id.
func (m *Model) TokenTypes() []TokenType { return m.types }

// Tensors returns the tensors' descriptions with their offsets in the data
// section, in file order.
func (m *Model) Tensors() []TensorInfo {
	infos, err := Layout(m.tensors, DefaultAlignment)
	if err != nil {
		panic(err) // NewModel only builds F32/F16 tensors of 1 or 2 dims
	}
	return infos
}

// Params returns the number of parameters (tensor elements).
func (m *Model) Params() int64 {
	var n int64
	for _, t := range m.tensors {
		n += int64(t.info().Elements())
	}
	return n
}

// Size returns the size in bytes of the file WriteTo writes.
func (m *Model) Size() int64 {
	n, err := fileSize(m.kv, m.tensors)
	if err != nil {
		panic(err) // the metadata types are fixed above
	}
	return n
}

// WriteTo writes the model as a GGUF v3 file and returns the bytes written.
func (m *Model) WriteTo(w io.Writer) (int64, error) {
	return Write(w, m.kv, m.tensors)
}
