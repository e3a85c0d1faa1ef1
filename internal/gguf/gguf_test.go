package gguf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestF16(t *testing.T) {
	tests := []struct {
		name string
		in   float32
		want uint16
	}{
		{"zero", 0, 0x0000},
		{"negative zero", float32(math.Copysign(0, -1)), 0x8000},
		{"one", 1, 0x3c00},
		{"minus two", -2, 0xc000},
		{"one third", 1.0 / 3, 0x3555},
		{"0.1 rounds to nearest", 0.1, 0x2e66},
		{"max half", 65504, 0x7bff},
		{"rounds up to inf", 65520, 0x7c00},
		{"overflow", 1e6, 0x7c00},
		{"negative overflow", -1e6, 0xfc00},
		{"smallest normal", 1.0 / (1 << 14), 0x0400},
		{"largest subnormal", 1023.0 / (1 << 24), 0x03ff},
		{"smallest subnormal", 1.0 / (1 << 24), 0x0001},
		{"half of smallest subnormal ties to even zero", 1.0 / (1 << 25), 0x0000},
		{"just above half of smallest subnormal", 1.0/(1<<25) + 1.0/(1<<35), 0x0001},
		{"underflow", 1e-10, 0x0000},
		{"tie to even down: 1+2^-11", 1 + 1.0/(1<<11), 0x3c00},
		{"tie to even up: 1+3·2^-11", 1 + 3.0/(1<<11), 0x3c02},
		{"mantissa carry into exponent", 2 - 1.0/(1<<12), 0x4000},
		{"suppress weight", -1000, 0xe3d0},
		{"inf", float32(math.Inf(1)), 0x7c00},
		{"nan", float32(math.NaN()), 0x7e00},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := F16(tt.in); got != tt.want {
				t.Errorf("F16(%v) = %#04x, want %#04x", tt.in, got, tt.want)
			}
		})
	}
}

// TestF16RoundTrip checks every half value: F32FromF16 is exact and F16
// maps it back to the same bits, and values between two halves round to the
// nearer one.
func TestF16RoundTrip(t *testing.T) {
	for h := range 1 << 16 {
		f := F32FromF16(uint16(h))
		if math.IsNaN(float64(f)) {
			if exp := h >> 10 & 0x1f; exp != 0x1f || h&0x3ff == 0 {
				t.Fatalf("%#04x decoded as NaN", h)
			}
			continue
		}
		if got := F16(f); got != uint16(h) {
			t.Fatalf("F16(F32FromF16(%#04x) = %v) = %#04x", h, f, got)
		}
		// Midpoint to the next half toward +Inf rounds to the even one.
		if h&0x8000 == 0 && h < 0x7bff {
			next := F32FromF16(uint16(h + 1))
			mid := f + (next-f)/2
			want := uint16(h)
			if h&1 == 1 {
				want = uint16(h + 1)
			}
			if got := F16(mid); got != want {
				t.Fatalf("F16(midpoint %v of %#04x and %#04x) = %#04x, want %#04x", mid, h, h+1, got, want)
			}
		}
	}
}

// allKinds holds one metadata value of every type Write supports.
var allKinds = []KV{
	{"u8", uint8(200)}, {"i8", int8(-100)}, {"u16", uint16(60000)}, {"i16", int16(-30000)},
	{"u32", uint32(4e9)}, {"i32", int32(-2e9)}, {"f32", float32(1.5)}, {"t", true}, {"f", false},
	{"s", "héllo"}, {"empty", ""}, {"u64", uint64(1 << 63)}, {"i64", int64(-1 << 62)}, {"f64", 2.25},
	{"as", []string{"a", "", "ü"}}, {"af", []float32{1, -2}}, {"ai", []int32{-1, 7}}, {"au", []uint32{3}},
	{"general.alignment", uint32(64)},
}

func TestWriteReadRoundTrip(t *testing.T) {
	tensors := []Tensor{
		{Name: "a", Dims: []uint64{3}, Type: TypeF32, Data: fill(12, 1)},
		{Name: "b", Dims: []uint64{5, 2}, Type: TypeF16, Data: fill(20, 2)},
		{Name: "c", Dims: []uint64{1, 1, 1, 1}, Type: TypeF16, Data: fill(2, 3)},
	}
	var buf bytes.Buffer
	n, err := Write(&buf, allKinds, tensors)
	if err != nil {
		t.Fatalf("Write: %v", err)
	}
	if size, _ := fileSize(allKinds, tensors); n != int64(buf.Len()) || n != size {
		t.Fatalf("Write returned %d, wrote %d, fileSize %d", n, buf.Len(), size)
	}
	f, err := Read(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	if !reflect.DeepEqual(f.KV, allKinds) {
		t.Errorf("metadata round trip:\n got %#v\nwant %#v", f.KV, allKinds)
	}
	if f.Alignment != 64 || f.DataOffset%64 != 0 {
		t.Errorf("alignment %d, data offset %d; want 64 and a multiple of it", f.Alignment, f.DataOffset)
	}
	wantOffsets := []uint64{0, 64, 128}
	for i, ti := range f.Tensors {
		if ti.Offset != wantOffsets[i] {
			t.Errorf("tensor %s offset %d, want %d", ti.Name, ti.Offset, wantOffsets[i])
		}
		b, _ := ti.Bytes()
		start := f.DataOffset + int64(ti.Offset)
		if got := buf.Bytes()[start : start+b]; !bytes.Equal(got, bytes.Repeat([]byte{byte(i + 1)}, int(b))) {
			t.Errorf("tensor %s data = %v", ti.Name, got)
		}
	}
	if err := f.Validate(int64(buf.Len())); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

// fill returns a Data function writing n bytes of value v.
func fill(n int, v byte) func(io.Writer) error {
	return func(w io.Writer) error {
		_, err := w.Write(bytes.Repeat([]byte{v}, n))
		return err
	}
}

func TestWriteErrors(t *testing.T) {
	ok := []Tensor{{Name: "x", Dims: []uint64{2}, Type: TypeF32, Data: fill(8, 0)}}
	tests := []struct {
		name    string
		kv      []KV
		tensors []Tensor
		wantErr string
	}{
		{"short data", nil, []Tensor{{Name: "x", Dims: []uint64{2}, Type: TypeF32, Data: fill(7, 0)}},
			`gguf: tensor "x": data wrote 7 bytes, want 8`},
		{"data error", nil, []Tensor{{Name: "x", Dims: []uint64{2}, Type: TypeF32, Data: func(io.Writer) error { return io.ErrClosedPipe }}},
			`gguf: tensor "x": io: read/write on closed pipe`},
		{"unknown tensor type", nil, []Tensor{{Name: "q", Dims: []uint64{32}, Type: 8, Data: fill(34, 0)}},
			`gguf: tensor "q": unknown type type(8)`},
		{"no dims", nil, []Tensor{{Name: "s", Type: TypeF32, Data: fill(4, 0)}},
			`gguf: tensor "s": 0 dimensions, want 1 to 4`},
		{"unsupported value", []KV{{"k", []bool{true}}}, ok, `gguf: key "k": unsupported value type []bool`},
		{"duplicate key", []KV{{"k", 1.0}, {"k", 2.0}}, ok, `gguf: duplicate key "k"`},
		{"alignment not uint32", []KV{{"general.alignment", 32}}, ok,
			"gguf: general.alignment must be a uint32 multiple of 8, got 32 (int)"},
		{"alignment not multiple of 8", []KV{{"general.alignment", uint32(12)}}, ok,
			"gguf: general.alignment must be a uint32 multiple of 8, got 12 (uint32)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Write(io.Discard, tt.kv, tt.tensors)
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("Write() = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// header builds a GGUF prefix by hand for Read's sad paths.
type header struct{ bytes.Buffer }

func (h *header) u32(v uint32) *header { binary.Write(h, binary.LittleEndian, v); return h }
func (h *header) u64(v uint64) *header { binary.Write(h, binary.LittleEndian, v); return h }
func (h *header) str(s string) *header { h.u64(uint64(len(s))); h.WriteString(s); return h }
func (h *header) start(tensors, kvs uint64) *header {
	h.WriteString("GGUF")
	return h.u32(3).u64(tensors).u64(kvs)
}

func TestReadErrors(t *testing.T) {
	tests := []struct {
		name    string
		data    []byte
		wantErr string
	}{
		{"empty", nil, "gguf: read magic: unexpected EOF"},
		{"not gguf", []byte("GGML\x03\x00\x00\x00"), ErrNotGGUF.Error()},
		{"version 2", []byte("GGUF\x02\x00\x00\x00"), "gguf: version 2, want 3"},
		{"truncated counts", []byte("GGUF\x03\x00\x00\x00\x01"), "gguf: read header: unexpected EOF"},
		{"too many tensors", new(header).start(1<<40, 0).Bytes(), "gguf: read header: tensor count 1099511627776 exceeds 1048576"},
		{"huge string", new(header).start(0, 1).u64(1 << 40).Bytes(), "gguf: metadata 0: key: string length 1099511627776 exceeds 1048576"},
		{"unknown value type", new(header).start(0, 1).str("k").u32(13).Bytes(), `gguf: metadata "k": unknown value type 13`},
		{"bool not 0 or 1", append(new(header).start(0, 1).str("k").u32(7).Bytes(), 2), `gguf: metadata "k": bool value 2`},
		{"nested array", new(header).start(0, 1).str("k").u32(9).u32(9).u64(1).Bytes(), `gguf: metadata "k": unsupported array element type 9`},
		{"huge array", new(header).start(0, 1).str("k").u32(9).u32(4).u64(1 << 40).Bytes(), `gguf: metadata "k": array count 1099511627776 exceeds 1048576`},
		{"truncated array", new(header).start(0, 1).str("k").u32(9).u32(4).u64(2).u32(1).Bytes(), `gguf: metadata "k": unexpected EOF`},
		{"duplicate key", new(header).start(0, 2).str("k").u32(4).u32(1).str("k").u32(4).u32(2).Bytes(), `gguf: metadata 1: duplicate key "k"`},
		{"bad alignment", new(header).start(0, 1).str("general.alignment").u32(4).u32(7).Bytes(),
			"gguf: general.alignment must be a uint32 multiple of 8, got 7 (uint32)"},
		{"five dims", new(header).start(1, 0).str("t").u32(5).Bytes(), `gguf: tensor "t": 5 dimensions, want 1 to 4`},
		{"truncated tensor info", new(header).start(1, 0).str("t").u32(2).u64(4).Bytes(), `gguf: tensor "t": unexpected EOF`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Read(bytes.NewReader(tt.data))
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("Read() = %v, want %q", err, tt.wantErr)
			}
		})
	}
	// Every prefix of a header with all value types, and every 61st prefix
	// of a model's header, is a truncated file.
	var buf bytes.Buffer
	if _, err := Write(&buf, allKinds, []Tensor{{Name: "b", Dims: []uint64{5, 2}, Type: TypeF16, Data: fill(20, 2)}}); err != nil {
		t.Fatal(err)
	}
	_, model := writeModel(t, small)
	for _, c := range []struct {
		name string
		data []byte
		step int
	}{{"all value types", buf.Bytes(), 1}, {"model", model, 61}} {
		t.Run("truncated "+c.name, func(t *testing.T) {
			f, err := Read(bytes.NewReader(c.data))
			if err != nil {
				t.Fatal(err)
			}
			end := int(f.DataOffset) - int(f.Alignment) + 1 // the header ends in the last alignment-1 bytes
			for n := 0; n < end; n += c.step {
				if _, err := Read(bytes.NewReader(c.data[:n])); err == nil {
					t.Fatalf("Read of the first %d bytes succeeded", n)
				} else if n > 8 && !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Fatalf("Read of the first %d bytes: %v, want unexpected EOF", n, err)
				}
			}
		})
	}
}

func TestValidate(t *testing.T) {
	f32 := func(name string, n, off uint64) TensorInfo {
		return TensorInfo{Name: name, Dims: []uint64{n}, Type: TypeF32, Offset: off}
	}
	tests := []struct {
		name    string
		file    File
		size    int64
		wantErr string
	}{
		{"ok", File{Alignment: 32, DataOffset: 64, Tensors: []TensorInfo{f32("a", 8, 0), f32("b", 8, 32)}}, 128, ""},
		{"ok to the last byte", File{Alignment: 32, DataOffset: 64, Tensors: []TensorInfo{f32("a", 8, 0)}}, 96, ""},
		{"data section misaligned", File{Alignment: 32, DataOffset: 40}, 100, "gguf: data section at 40 not aligned to 32"},
		{"offset misaligned", File{Alignment: 32, DataOffset: 64, Tensors: []TensorInfo{f32("a", 8, 16)}}, 200,
			`gguf: tensor "a": offset 16 not aligned to 32`},
		{"overlap", File{Alignment: 32, DataOffset: 64, Tensors: []TensorInfo{f32("a", 16, 0), f32("b", 8, 32)}}, 200,
			`gguf: tensors "a" and "b" overlap`},
		{"past the end", File{Alignment: 32, DataOffset: 64, Tensors: []TensorInfo{f32("a", 8, 0)}}, 95,
			`gguf: tensor "a": ends at 96, past the end of the file (95 bytes)`},
		{"unknown type", File{Alignment: 32, DataOffset: 64, Tensors: []TensorInfo{{Name: "q", Dims: []uint64{32}, Type: 2}}}, 200,
			`gguf: tensor "q": unknown type type(2)`},
		{"zero dimension", File{Alignment: 32, DataOffset: 64, Tensors: []TensorInfo{{Name: "z", Dims: []uint64{4, 0}, Type: TypeF32}}}, 200,
			`gguf: tensor "z": zero dimension in [4 0]`},
		{"overflowing dims", File{Alignment: 32, DataOffset: 64, Tensors: []TensorInfo{{Name: "o", Dims: []uint64{1 << 62, 8}, Type: TypeF32}}}, 200,
			`gguf: tensor "o": dimensions [4611686018427387904 8] larger than the file (200 bytes)`},
		{"duplicate name", File{Alignment: 32, DataOffset: 64, Tensors: []TensorInfo{f32("a", 8, 0), f32("a", 8, 32)}}, 200,
			`gguf: duplicate tensor "a"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.file.Validate(tt.size)
			if got := fmt.Sprint(err); (err == nil) != (tt.wantErr == "") || (err != nil && got != tt.wantErr) {
				t.Errorf("Validate() = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func FuzzRead(f *testing.F) {
	var buf bytes.Buffer
	Write(&buf, allKinds, []Tensor{{Name: "b", Dims: []uint64{5, 2}, Type: TypeF16, Data: fill(20, 2)}})
	f.Add(buf.Bytes())
	f.Add(new(header).start(1, 1).str("k").u32(8).str("v").str("t").u32(1).u64(4).u32(0).u64(0).Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Read(bytes.NewReader(data))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "gguf: ") {
				t.Errorf("error %q lacks the package prefix", err)
			}
			return
		}
		_ = file.Validate(int64(len(data)))
	})
}
