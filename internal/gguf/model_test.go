package gguf

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// small is a model small enough to write in a few milliseconds.
var small = Options{Seed: 1, Dim: 64, Layers: 2, Heads: 4, KVHeads: 2, FFN: 96, Vocab: 600}

// smallSHA256 pins the bytes of small: the generator must give the same file
// on every machine and Go version (math/rand/v2's PCG is specified). Changing
// the generator on purpose changes this; update it then.
const smallSHA256 = "cb19d4f1ab507af85e2a1149cb36ebb4c042fea52404c720c52ae96f1c488d00"

func writeModel(t testing.TB, o Options) (*Model, []byte) {
	t.Helper()
	m, err := NewModel(o)
	if err != nil {
		t.Fatalf("NewModel: %v", err)
	}
	var buf bytes.Buffer
	n, err := m.WriteTo(&buf)
	if err != nil {
		t.Fatalf("WriteTo: %v", err)
	}
	if n != int64(buf.Len()) || n != m.Size() {
		t.Fatalf("WriteTo returned %d, wrote %d, Size() = %d; want all equal", n, buf.Len(), m.Size())
	}
	return m, buf.Bytes()
}

// expectedTensors lists the llama tensors in file order, computed from the
// options independently of model.go.
func expectedTensors(o Options) []TensorInfo {
	d, kv, f, v := uint64(o.Dim), uint64(o.KVHeads*o.Dim/o.Heads), uint64(o.FFN), uint64(o.Vocab)
	ts := []TensorInfo{{Name: "token_embd.weight", Dims: []uint64{d, v}, Type: TypeF16}}
	for i := range o.Layers {
		p := fmt.Sprintf("blk.%d.", i)
		ts = append(ts,
			TensorInfo{Name: p + "attn_norm.weight", Dims: []uint64{d}, Type: TypeF32},
			TensorInfo{Name: p + "attn_q.weight", Dims: []uint64{d, d}, Type: TypeF16},
			TensorInfo{Name: p + "attn_k.weight", Dims: []uint64{d, kv}, Type: TypeF16},
			TensorInfo{Name: p + "attn_v.weight", Dims: []uint64{d, kv}, Type: TypeF16},
			TensorInfo{Name: p + "attn_output.weight", Dims: []uint64{d, d}, Type: TypeF16},
			TensorInfo{Name: p + "ffn_norm.weight", Dims: []uint64{d}, Type: TypeF32},
			TensorInfo{Name: p + "ffn_gate.weight", Dims: []uint64{d, f}, Type: TypeF16},
			TensorInfo{Name: p + "ffn_up.weight", Dims: []uint64{d, f}, Type: TypeF16},
			TensorInfo{Name: p + "ffn_down.weight", Dims: []uint64{f, d}, Type: TypeF16},
		)
	}
	return append(ts,
		TensorInfo{Name: "output_norm.weight", Dims: []uint64{d}, Type: TypeF32},
		TensorInfo{Name: "output.weight", Dims: []uint64{d, v}, Type: TypeF16},
	)
}

func TestModelHeaderMetadataAndLayout(t *testing.T) {
	m, data := writeModel(t, small)
	f, err := Read(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	if string(data[:4]) != "GGUF" || binary.LittleEndian.Uint32(data[4:]) != 3 || f.Version != 3 {
		t.Fatalf("header %q version %d, want GGUF v3", data[:4], f.Version)
	}
	if err := f.Validate(int64(len(data))); err != nil {
		t.Fatalf("Validate: %v", err)
	}

	wantKV := map[string]any{
		"general.architecture":                   "llama",
		"general.name":                           "surge-tiny",
		"general.file_type":                      uint32(1),
		"general.alignment":                      uint32(32),
		"llama.context_length":                   uint32(DefaultContextLength),
		"llama.embedding_length":                 uint32(64),
		"llama.block_count":                      uint32(2),
		"llama.feed_forward_length":              uint32(96),
		"llama.attention.head_count":             uint32(4),
		"llama.attention.head_count_kv":          uint32(2),
		"llama.attention.layer_norm_rms_epsilon": float32(1e-5),
		"llama.rope.dimension_count":             uint32(16),
		"llama.rope.freq_base":                   float32(10000),
		"llama.vocab_size":                       uint32(600),
		"tokenizer.ggml.model":                   "llama",
		"tokenizer.ggml.bos_token_id":            uint32(1),
		"tokenizer.ggml.eos_token_id":            uint32(2),
		"tokenizer.ggml.unknown_token_id":        uint32(0),
		"tokenizer.ggml.add_bos_token":           true,
		"tokenizer.ggml.add_eos_token":           false,
	}
	for k, want := range wantKV {
		got, ok := f.Get(k)
		if !ok || got != want {
			t.Errorf("%s = %v (%T), want %v (%T)", k, got, got, want, want)
		}
	}
	if tmpl, _ := f.Get("tokenizer.chat_template"); !strings.Contains(fmt.Sprint(tmpl), "<|im_start|>") {
		t.Errorf("tokenizer.chat_template = %q, want ChatML", tmpl)
	}
	tokens, _ := f.Get("tokenizer.ggml.tokens")
	scores, _ := f.Get("tokenizer.ggml.scores")
	types, _ := f.Get("tokenizer.ggml.token_type")
	toks, ok1 := tokens.([]string)
	scs, ok2 := scores.([]float32)
	tys, ok3 := types.([]int32)
	if !ok1 || !ok2 || !ok3 || len(toks) != 600 || len(scs) != 600 || len(tys) != 600 {
		t.Fatalf("tokenizer arrays: %T %T %T, want 600 each of []string []float32 []int32", tokens, scores, types)
	}
	for id, want := range map[int]struct {
		s string
		t TokenType
	}{
		0: {"<unk>", TokenUnknown}, 1: {"<s>", TokenControl}, 2: {"</s>", TokenControl},
		3: {"<0x00>", TokenByte}, 13: {"<0x0A>", TokenByte}, 258: {"<0xFF>", TokenByte},
		259: {"<|im_start|>", TokenControl}, 260: {"<|im_end|>", TokenControl},
		261: {"▁", TokenNormal},
	} {
		if toks[id] != want.s || TokenType(tys[id]) != want.t {
			t.Errorf("token %d = %q type %d, want %q type %d", id, toks[id], tys[id], want.s, want.t)
		}
	}

	// Tensors: names, shapes and types in order; offsets aligned, packed
	// in order with at most alignment-1 bytes of padding; the file ends
	// exactly at the last tensor's end.
	want := expectedTensors(small.withDefaults())
	if len(f.Tensors) != len(want) {
		t.Fatalf("%d tensors, want %d", len(f.Tensors), len(want))
	}
	if f.DataOffset%32 != 0 {
		t.Errorf("data section at %d, not 32-aligned", f.DataOffset)
	}
	var end uint64
	var params int64
	for i, got := range f.Tensors {
		w := want[i]
		if got.Name != w.Name || !slices.Equal(got.Dims, w.Dims) || got.Type != w.Type {
			t.Errorf("tensor %d = %s %v %v, want %s %v %v", i, got.Name, got.Dims, got.Type, w.Name, w.Dims, w.Type)
		}
		if got.Offset%32 != 0 || got.Offset < end || got.Offset-end >= 32 {
			t.Errorf("tensor %s at offset %d, previous ends at %d: want the next multiple of 32", got.Name, got.Offset, end)
		}
		n, _ := got.Bytes()
		end = got.Offset + uint64(n)
		params += int64(got.Elements())
	}
	if got := f.DataOffset + int64(end); got != int64(len(data)) {
		t.Errorf("last tensor ends at %d, file has %d bytes", got, len(data))
	}
	if params != m.Params() {
		t.Errorf("Params() = %d, tensors hold %d elements", m.Params(), params)
	}
	if !slices.EqualFunc(m.Tensors(), f.Tensors, func(a, b TensorInfo) bool {
		return a.Name == b.Name && a.Offset == b.Offset && slices.Equal(a.Dims, b.Dims) && a.Type == b.Type
	}) {
		t.Errorf("Model.Tensors() differs from the tensors read back")
	}
}

// tensorF32 decodes a tensor's data (F16 or F32) from a file image.
func tensorF32(t *testing.T, f *File, data []byte, name string) (TensorInfo, []float32) {
	t.Helper()
	info, ok := f.Tensor(name)
	if !ok {
		t.Fatalf("no tensor %s", name)
	}
	start := f.DataOffset + int64(info.Offset)
	out := make([]float32, info.Elements())
	for i := range out {
		switch info.Type {
		case TypeF16:
			out[i] = F32FromF16(binary.LittleEndian.Uint16(data[start+2*int64(i):]))
		case TypeF32:
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[start+4*int64(i):]))
		}
	}
	return info, out
}

func TestModelWeights(t *testing.T) {
	o := small.withDefaults()
	m, data := writeModel(t, o)
	f, err := Read(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	d := o.Dim
	const f16tol = 1e-3 // relative F16 rounding

	t.Run("embedding +1 in dimension 0", func(t *testing.T) {
		_, w := tensorF32(t, f, data, "token_embd.weight")
		for tok := range o.Vocab {
			row := w[tok*d : (tok+1)*d]
			if row[0] < 0.5-f16tol || row[0] > 1.5+f16tol {
				t.Fatalf("token %d dimension 0 = %v, want in [0.5, 1.5]", tok, row[0])
			}
			for _, v := range row[1:] {
				if math.Abs(float64(v)) > 0.5+f16tol {
					t.Fatalf("token %d has %v, want within ±0.5", tok, v)
				}
			}
		}
	})
	t.Run("row 0 of attn_output and ffn_down is zero", func(t *testing.T) {
		for l := range o.Layers {
			for _, name := range []string{"attn_output", "ffn_down"} {
				info, w := tensorF32(t, f, data, fmt.Sprintf("blk.%d.%s.weight", l, name))
				in := int(info.Dims[0])
				if slices.ContainsFunc(w[:in], func(v float32) bool { return v != 0 }) {
					t.Errorf("%s layer %d: row 0 not zero", name, l)
				}
				if !slices.ContainsFunc(w[in:2*in], func(v float32) bool { return v != 0 }) {
					t.Errorf("%s layer %d: row 1 is zero too", name, l)
				}
			}
		}
	})
	t.Run("output suppresses control, byte and unknown tokens", func(t *testing.T) {
		_, w := tensorF32(t, f, data, "output.weight")
		a := math.Sqrt(3.0/float64(d)) * (1 + f16tol)
		suppressed := 0
		for tok, typ := range m.TokenTypes() {
			v := float64(w[tok*d])
			if typ == TokenNormal {
				if math.Abs(v) > a {
					t.Fatalf("normal token %d: dimension 0 = %v, want within ±%.3f", tok, v, a)
				}
				continue
			}
			suppressed++
			if v != DefaultSuppressWeight {
				t.Fatalf("token %d (type %d): dimension 0 = %v, want %v", tok, typ, v, DefaultSuppressWeight)
			}
		}
		if suppressed != 261 {
			t.Errorf("%d suppressed tokens, want 261", suppressed)
		}
	})
	t.Run("norms are ones", func(t *testing.T) {
		for _, name := range []string{"blk.0.attn_norm.weight", "blk.1.ffn_norm.weight", "output_norm.weight"} {
			_, w := tensorF32(t, f, data, name)
			if slices.ContainsFunc(w, func(v float32) bool { return v != 1 }) {
				t.Errorf("%s is not all ones", name)
			}
		}
	})
	t.Run("matrices uniform with std 1/sqrt(fan_in)", func(t *testing.T) {
		for _, name := range []string{"blk.0.attn_q.weight", "blk.1.ffn_gate.weight", "blk.1.ffn_down.weight"} {
			info, w := tensorF32(t, f, data, name)
			in := float64(info.Dims[0])
			a := math.Sqrt(3 / in)
			var sum, sq float64
			for _, v := range w {
				if math.Abs(float64(v)) > a*(1+f16tol) {
					t.Fatalf("%s: %v outside ±%.4f", name, v, a)
				}
				sum += float64(v)
				sq += float64(v) * float64(v)
			}
			n := float64(len(w))
			std := math.Sqrt(sq/n - (sum/n)*(sum/n))
			if want := 1 / math.Sqrt(in); math.Abs(std-want) > 0.1*want {
				t.Errorf("%s: std %.4f, want %.4f ± 10%%", name, std, want)
			}
		}
	})
}

func TestVocab(t *testing.T) {
	m, err := NewModel(Options{})
	if err != nil {
		t.Fatal(err)
	}
	var tokens []string
	var scores []float32
	for _, kv := range m.KV() {
		switch kv.Key {
		case "tokenizer.ggml.tokens":
			tokens = kv.Value.([]string)
		case "tokenizer.ggml.scores":
			scores = kv.Value.([]float32)
		}
	}
	types := m.TokenTypes()
	if len(tokens) != DefaultVocab || len(types) != DefaultVocab {
		t.Fatalf("%d tokens, %d types, want %d", len(tokens), len(types), DefaultVocab)
	}
	seen := map[string]bool{}
	normal := 0
	for i, tok := range tokens {
		if seen[tok] {
			t.Fatalf("duplicate token %q", tok)
		}
		seen[tok] = true
		if types[i] != TokenNormal {
			continue
		}
		normal++
		if !utf8.ValidString(tok) || strings.ContainsAny(tok, "<>| \n\t") {
			t.Errorf("piece %d %q is not clean text", i, tok)
		}
	}
	if normal != DefaultVocab-261 {
		t.Errorf("%d word-like pieces, want %d", normal, DefaultVocab-261)
	}
	for i, tok := range tokens {
		if types[i] != TokenNormal {
			continue
		}
		// Prefix closure: SentencePiece merging can build every piece.
		if r, size := utf8.DecodeLastRuneInString(tok); size < len(tok) && !seen[tok[:len(tok)-size]] {
			t.Errorf("piece %q: prefix %q missing (last rune %q)", tok, tok[:len(tok)-size], r)
		}
		// Longer pieces score higher than all shorter ones.
		n := float32(utf8.RuneCountInString(tok))
		if scores[i] <= n-1 || scores[i] > n {
			t.Errorf("piece %q score %v, want in (%v, %v]", tok, scores[i], n-1, n)
		}
	}
	for _, w := range []string{"▁the", "▁model", "▁queue", "▁The", "▁a", "a", "."} {
		if !seen[w] {
			t.Errorf("piece %q missing", w)
		}
	}
}

func TestDeterminism(t *testing.T) {
	hash := func(o Options) string {
		_, data := writeModel(t, o)
		h := sha256.Sum256(data)
		return hex.EncodeToString(h[:])
	}
	a, b := hash(small), hash(small)
	if a != b {
		t.Fatalf("same seed, different bytes: %s vs %s", a, b)
	}
	if a != smallSHA256 {
		t.Errorf("small model sha256 = %s, want %s (generator changed?)", a, smallSHA256)
	}
	other := small
	other.Seed = 2
	if c := hash(other); c == a {
		t.Errorf("seeds 1 and 2 give the same bytes %s", c)
	}
}

func TestDefaultModelSize(t *testing.T) {
	m, err := NewModel(Options{})
	if err != nil {
		t.Fatal(err)
	}
	// 2·V·d (embedding, output) + L·(2d² + 2·d·kv + 3·d·ffn + 2d) + d.
	const d, v, l, kv, ffn = 512, 8192, 8, 256, 1408
	const want = 2*v*d + l*(2*d*d+2*d*kv+3*d*ffn+2*d) + d
	if got := m.Params(); got != want {
		t.Errorf("Params() = %d, want %d", got, want)
	}
	if got := m.Size(); got < 2*want || got > 2*want+1<<20 {
		t.Errorf("Size() = %d, want 2 bytes per parameter (%d) plus a header under 1 MiB", got, 2*want)
	}
}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		wantErr string
	}{
		{name: "zero value means defaults", opts: Options{}},
		{name: "small", opts: small},
		{name: "seed zero", opts: Options{Seed: 0, Vocab: MinVocab}},
		{name: "negative dim", opts: Options{Dim: -1}, wantErr: "gguf: options: Dim is -1, must be positive"},
		{name: "huge vocab", opts: Options{Vocab: 1<<20 + 1}, wantErr: "gguf: options: Vocab is 1048577, at most 1048576"},
		{name: "dim not multiple of heads", opts: Options{Dim: 100, Heads: 8}, wantErr: "gguf: options: Dim 100 is not a multiple of Heads 8"},
		{name: "odd head dim", opts: Options{Dim: 24, Heads: 8, KVHeads: 4}, wantErr: "gguf: options: head dimension 3 must be even (rotary embedding)"},
		{name: "heads not multiple of kv heads", opts: Options{Heads: 8, KVHeads: 3}, wantErr: "gguf: options: Heads 8 is not a multiple of KVHeads 3"},
		{name: "vocab too small", opts: Options{Vocab: 300}, wantErr: "gguf: options: Vocab 300 below the minimum 512"},
		{name: "positive suppress weight", opts: Options{SuppressWeight: 5}, wantErr: "gguf: options: SuppressWeight 5 must be negative and within F16 range"},
		{name: "suppress weight beyond f16", opts: Options{SuppressWeight: -1e6}, wantErr: "gguf: options: SuppressWeight -1e+06 must be negative and within F16 range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.opts.Validate()
			if got := fmt.Sprint(err); (err == nil) != (tt.wantErr == "") || (err != nil && got != tt.wantErr) {
				t.Errorf("Validate() = %v, want %q", err, tt.wantErr)
			}
			if _, nerr := NewModel(tt.opts); (nerr == nil) != (err == nil) {
				t.Errorf("NewModel error %v disagrees with Validate %v", nerr, err)
			}
		})
	}
}

func BenchmarkWriteDefaultModel(b *testing.B) {
	m, err := NewModel(Options{Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(m.Size())
	for b.Loop() {
		if _, err := m.WriteTo(io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}
