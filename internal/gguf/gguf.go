// Package gguf writes and reads GGUF v3 files and generates a tiny
// random-weight llama model that real inference engines (Ollama, llama.cpp)
// load and run, so that surge can be tested against a real engine on a
// machine without a GPU or a model hub.
//
// # File format
//
// A GGUF v3 file (all integers little-endian) is
//
//	magic "GGUF" | version uint32 = 3 | tensor count uint64 | KV count uint64
//	KV pairs:      key string | value type uint32 | value
//	tensor infos:  name string | n_dims uint32 | dims [n_dims]uint64 |
//	               type uint32 | offset uint64
//	padding to the alignment, then the tensor data section
//
// where a string is a uint64 byte length followed by UTF-8 bytes and an array
// value is element type uint32 | count uint64 | elements. dims[0] is the
// contiguous (innermost) dimension, so a matrix with dims [in, out] stores
// out rows of in elements each. A tensor's offset is relative to the start of
// the data section and is a multiple of the alignment (general.alignment,
// default 32 bytes); a tensor occupies product(dims) × element size bytes
// (F32 4, F16 2).
//
// # The tiny model
//
// NewModel builds a llama-architecture model (defaults: embedding dimension
// d = 512, 8 layers, 8 attention heads, 4 KV heads, feed-forward width 1408,
// vocabulary V = 8192: about 32 M parameters, 64 MB in F16). Matrices are F16
// with elements uniform in [−a, a], a = √3/√fan_in, so each has standard
// deviation 1/√fan_in (fan_in = dims[0]); RMS-norm weights are F32 ones.
// Token embeddings are uniform in [−½, ½] (standard deviation 0.29).
//
// Three edits make every request generate clean text until max_tokens:
//
//  1. Every token embedding gets +1 in dimension 0, so the residual stream
//     starts with x₀ ∈ [½, 1½].
//  2. Row 0 of every attn_output and ffn_down matrix is zero, so no layer
//     writes to dimension 0: x₀ stays in [½, 1½] to the last layer, and after
//     the final RMS norm it is x₀/rms(x) > 0.
//  3. Dimension 0 of output.weight is SuppressWeight (default −1000) for the
//     control, byte-fallback and unknown tokens, so their logits are shifted by
//     SuppressWeight × x₀/rms(x) after the final norm: far below the ordinary
//     logits, whose standard deviation is ≈ 1 (a row of d weights of standard
//     deviation 1/√d against a unit-RMS vector). The engine never samples
//     end-of-sequence, a chat marker or a raw byte, so every request runs to
//     max_tokens and the text is valid UTF-8 made of word-like pieces.
//
// The tokenizer is SentencePiece-style ("llama"): <unk>, <s>, </s>, the 256
// byte-fallback tokens <0x00>…<0xFF>, <|im_start|> and <|im_end|>, then
// word-like pieces ("▁" marks a leading space): single characters, common
// English words and pseudo-words made of syllables, each with all its
// prefixes so that merging can reach it. A piece's score is its length in
// runes minus index/V, so longer pieces win merges.
//
// Everything is derived from Options.Seed with math/rand/v2's PCG, so a seed
// gives the same bytes on every machine.
package gguf

import "fmt"

// Magic is the first four bytes of every GGUF file.
const Magic = "GGUF"

// Version is the GGUF version this package writes and reads.
const Version = 3

// DefaultAlignment is the tensor data alignment in bytes when the file has no
// general.alignment key.
const DefaultAlignment = 32

// Type is a ggml tensor element type.
type Type uint32

// Tensor element types this package knows the size of.
const (
	TypeF32 Type = 0 // 32-bit IEEE float, 4 bytes
	TypeF16 Type = 1 // 16-bit IEEE half float, 2 bytes
)

// String returns the ggml name of the type ("F32", "F16") or "type(N)".
func (t Type) String() string {
	switch t {
	case TypeF32:
		return "F32"
	case TypeF16:
		return "F16"
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// ElemSize returns the bytes per element, and false for a type this package
// does not know.
func (t Type) ElemSize() (int64, bool) {
	switch t {
	case TypeF32:
		return 4, true
	case TypeF16:
		return 2, true
	}
	return 0, false
}

// ValueType is the type tag of a GGUF metadata value.
type ValueType uint32

// GGUF metadata value types.
const (
	ValueUint8   ValueType = 0
	ValueInt8    ValueType = 1
	ValueUint16  ValueType = 2
	ValueInt16   ValueType = 3
	ValueUint32  ValueType = 4
	ValueInt32   ValueType = 5
	ValueFloat32 ValueType = 6
	ValueBool    ValueType = 7
	ValueString  ValueType = 8
	ValueArray   ValueType = 9
	ValueUint64  ValueType = 10
	ValueInt64   ValueType = 11
	ValueFloat64 ValueType = 12
)

// KV is one metadata entry. Value holds one of the Go types uint8, int8,
// uint16, int16, uint32, int32, float32, bool, string, uint64, int64, float64,
// or a slice of one of them (a GGUF array); Read returns the same types.
type KV struct {
	Key   string
	Value any
}

// TensorInfo describes one tensor: its name, its dimensions with the
// contiguous one first, its element type, and its offset in bytes from the
// start of the data section.
type TensorInfo struct {
	Name   string
	Dims   []uint64
	Type   Type
	Offset uint64
}

// Elements returns the number of elements, the product of the dimensions.
func (t TensorInfo) Elements() uint64 {
	n := uint64(1)
	for _, d := range t.Dims {
		n *= d
	}
	return n
}

// Bytes returns the size of the tensor's data, and false for an unknown type.
func (t TensorInfo) Bytes() (int64, bool) {
	s, ok := t.Type.ElemSize()
	return int64(t.Elements()) * s, ok
}

// alignUp rounds n up to a multiple of align (a power of two or any positive
// number).
func alignUp(n, align uint64) uint64 {
	return (n + align - 1) / align * align
}
