package gguf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"slices"
)

// Limits that keep Read from allocating without bound on a corrupt file.
const (
	maxCount     = 1 << 20 // tensors, KV pairs, array elements
	maxStringLen = 1 << 20 // bytes in one string
	maxDims      = 4
)

// File is the parsed header of a GGUF file: everything before the tensor
// data.
type File struct {
	Version   uint32
	KV        []KV
	Tensors   []TensorInfo
	Alignment uint64 // general.alignment, or DefaultAlignment
	// DataOffset is the absolute file offset of the data section: the end of
	// the header rounded up to Alignment. Tensor i's data starts at
	// DataOffset + Tensors[i].Offset.
	DataOffset int64
}

// Get returns the value of key and whether it is present.
func (f *File) Get(key string) (any, bool) {
	for _, e := range f.KV {
		if e.Key == key {
			return e.Value, true
		}
	}
	return nil, false
}

// Tensor returns the tensor named name and whether it is present.
func (f *File) Tensor(name string) (TensorInfo, bool) {
	for _, t := range f.Tensors {
		if t.Name == name {
			return t, true
		}
	}
	return TensorInfo{}, false
}

// Validate checks the tensor layout against a file of size bytes: every
// tensor has a known type, 1 to 4 non-zero dimensions and an offset that is a
// multiple of Alignment; tensors do not overlap and end within the file.
func (f *File) Validate(size int64) error {
	if f.DataOffset%int64(f.Alignment) != 0 {
		return fmt.Errorf("gguf: data section at %d not aligned to %d", f.DataOffset, f.Alignment)
	}
	type span struct {
		name       string
		start, end uint64
	}
	spans := make([]span, 0, len(f.Tensors))
	names := make(map[string]bool, len(f.Tensors))
	for _, t := range f.Tensors {
		if names[t.Name] {
			return fmt.Errorf("gguf: duplicate tensor %q", t.Name)
		}
		names[t.Name] = true
		es, ok := t.Type.ElemSize()
		if !ok {
			return fmt.Errorf("gguf: tensor %q: unknown type %v", t.Name, t.Type)
		}
		if slices.Contains(t.Dims, 0) {
			return fmt.Errorf("gguf: tensor %q: zero dimension in %v", t.Name, t.Dims)
		}
		n := uint64(es)
		for _, d := range t.Dims {
			hi, lo := bits.Mul64(n, d)
			if hi != 0 || lo > uint64(size) {
				return fmt.Errorf("gguf: tensor %q: dimensions %v larger than the file (%d bytes)", t.Name, t.Dims, size)
			}
			n = lo
		}
		if t.Offset > uint64(size) {
			return fmt.Errorf("gguf: tensor %q: offset %d past the end of the file (%d bytes)", t.Name, t.Offset, size)
		}
		if t.Offset%f.Alignment != 0 {
			return fmt.Errorf("gguf: tensor %q: offset %d not aligned to %d", t.Name, t.Offset, f.Alignment)
		}
		end := uint64(f.DataOffset) + t.Offset + n
		if end > uint64(size) {
			return fmt.Errorf("gguf: tensor %q: ends at %d, past the end of the file (%d bytes)", t.Name, end, size)
		}
		spans = append(spans, span{t.Name, t.Offset, t.Offset + n})
	}
	slices.SortFunc(spans, func(a, b span) int { return cmpUint64(a.start, b.start) })
	for i := 1; i < len(spans); i++ {
		if spans[i].start < spans[i-1].end {
			return fmt.Errorf("gguf: tensors %q and %q overlap", spans[i-1].name, spans[i].name)
		}
	}
	return nil
}

func cmpUint64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// ErrNotGGUF is returned by Read when the file does not start with Magic.
var ErrNotGGUF = errors.New("gguf: not a GGUF file")

// reader decodes little-endian values and counts the bytes consumed.
type reader struct {
	r   *bufio.Reader
	n   int64
	buf [8]byte
}

func (r *reader) read(k int) ([]byte, error) {
	if _, err := io.ReadFull(r.r, r.buf[:k]); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	r.n += int64(k)
	return r.buf[:k], nil
}

func (r *reader) u8() (uint8, error) {
	b, err := r.read(1)
	if err != nil {
		return 0, err
	}
	return b[0], nil
}

func (r *reader) u16() (uint16, error) {
	b, err := r.read(2)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint16(b), nil
}

func (r *reader) u32() (uint32, error) {
	b, err := r.read(4)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

func (r *reader) u64() (uint64, error) {
	b, err := r.read(8)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

func (r *reader) count(what string) (int, error) {
	n, err := r.u64()
	if err != nil {
		return 0, err
	}
	if n > maxCount {
		return 0, fmt.Errorf("%s count %d exceeds %d", what, n, maxCount)
	}
	return int(n), nil
}

func (r *reader) str() (string, error) {
	n, err := r.u64()
	if err != nil {
		return "", err
	}
	if n > maxStringLen {
		return "", fmt.Errorf("string length %d exceeds %d", n, maxStringLen)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r.r, b); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return "", err
	}
	r.n += int64(n)
	return string(b), nil
}

// scalar reads one value of a non-array type.
func (r *reader) scalar(t ValueType) (any, error) {
	switch t {
	case ValueUint8:
		return r.u8()
	case ValueInt8:
		v, err := r.u8()
		return int8(v), err
	case ValueUint16:
		return r.u16()
	case ValueInt16:
		v, err := r.u16()
		return int16(v), err
	case ValueUint32:
		return r.u32()
	case ValueInt32:
		v, err := r.u32()
		return int32(v), err
	case ValueFloat32:
		v, err := r.u32()
		return math.Float32frombits(v), err
	case ValueBool:
		v, err := r.u8()
		if err == nil && v > 1 {
			err = fmt.Errorf("bool value %d", v)
		}
		return v == 1, err
	case ValueString:
		return r.str()
	case ValueUint64:
		return r.u64()
	case ValueInt64:
		v, err := r.u64()
		return int64(v), err
	case ValueFloat64:
		v, err := r.u64()
		return math.Float64frombits(v), err
	}
	return nil, fmt.Errorf("unknown value type %d", t)
}

// readArray reads n elements of type t into a slice of the matching Go type.
func readArray[T any](r *reader, t ValueType, n int) ([]T, error) {
	out := make([]T, 0, min(n, 4096))
	for range n {
		v, err := r.scalar(t)
		if err != nil {
			return nil, err
		}
		out = append(out, v.(T))
	}
	return out, nil
}

func (r *reader) value(t ValueType) (any, error) {
	if t != ValueArray {
		return r.scalar(t)
	}
	et, err := r.u32()
	if err != nil {
		return nil, err
	}
	n, err := r.count("array")
	if err != nil {
		return nil, err
	}
	switch ValueType(et) {
	case ValueUint8:
		return readArray[uint8](r, ValueUint8, n)
	case ValueInt8:
		return readArray[int8](r, ValueInt8, n)
	case ValueUint16:
		return readArray[uint16](r, ValueUint16, n)
	case ValueInt16:
		return readArray[int16](r, ValueInt16, n)
	case ValueUint32:
		return readArray[uint32](r, ValueUint32, n)
	case ValueInt32:
		return readArray[int32](r, ValueInt32, n)
	case ValueFloat32:
		return readArray[float32](r, ValueFloat32, n)
	case ValueBool:
		return readArray[bool](r, ValueBool, n)
	case ValueString:
		return readArray[string](r, ValueString, n)
	case ValueUint64:
		return readArray[uint64](r, ValueUint64, n)
	case ValueInt64:
		return readArray[int64](r, ValueInt64, n)
	case ValueFloat64:
		return readArray[float64](r, ValueFloat64, n)
	}
	return nil, fmt.Errorf("unsupported array element type %d", et)
}

// Read parses a GGUF v3 header from r, which must be positioned at the start
// of the file. It reads up to the end of the tensor infos and no tensor data;
// call File.Validate with the file size to check the layout.
func Read(r io.Reader) (*File, error) {
	rd := &reader{r: bufio.NewReader(r)}
	magic, err := rd.read(4)
	if err != nil {
		return nil, fmt.Errorf("gguf: read magic: %w", err)
	}
	if string(magic) != Magic {
		return nil, ErrNotGGUF
	}
	f := &File{Alignment: DefaultAlignment}
	if f.Version, err = rd.u32(); err != nil {
		return nil, fmt.Errorf("gguf: read version: %w", err)
	}
	if f.Version != Version {
		return nil, fmt.Errorf("gguf: version %d, want %d", f.Version, Version)
	}
	nt, err := rd.count("tensor")
	if err != nil {
		return nil, fmt.Errorf("gguf: read header: %w", err)
	}
	nkv, err := rd.count("metadata")
	if err != nil {
		return nil, fmt.Errorf("gguf: read header: %w", err)
	}
	keys := make(map[string]bool, nkv)
	for i := range nkv {
		key, err := rd.str()
		if err != nil {
			return nil, fmt.Errorf("gguf: metadata %d: key: %w", i, err)
		}
		if keys[key] {
			return nil, fmt.Errorf("gguf: metadata %d: duplicate key %q", i, key)
		}
		keys[key] = true
		t, err := rd.u32()
		if err != nil {
			return nil, fmt.Errorf("gguf: metadata %q: %w", key, err)
		}
		v, err := rd.value(ValueType(t))
		if err != nil {
			return nil, fmt.Errorf("gguf: metadata %q: %w", key, err)
		}
		f.KV = append(f.KV, KV{Key: key, Value: v})
	}
	if f.Alignment, err = alignmentOf(f.KV); err != nil {
		return nil, err
	}
	for i := range nt {
		var t TensorInfo
		if t.Name, err = rd.str(); err != nil {
			return nil, fmt.Errorf("gguf: tensor %d: name: %w", i, err)
		}
		nd, err := rd.u32()
		if err != nil {
			return nil, fmt.Errorf("gguf: tensor %q: %w", t.Name, err)
		}
		if nd == 0 || nd > maxDims {
			return nil, fmt.Errorf("gguf: tensor %q: %d dimensions, want 1 to %d", t.Name, nd, maxDims)
		}
		t.Dims = make([]uint64, nd)
		for j := range t.Dims {
			if t.Dims[j], err = rd.u64(); err != nil {
				return nil, fmt.Errorf("gguf: tensor %q: %w", t.Name, err)
			}
		}
		typ, err := rd.u32()
		if err != nil {
			return nil, fmt.Errorf("gguf: tensor %q: %w", t.Name, err)
		}
		t.Type = Type(typ)
		if t.Offset, err = rd.u64(); err != nil {
			return nil, fmt.Errorf("gguf: tensor %q: %w", t.Name, err)
		}
		f.Tensors = append(f.Tensors, t)
	}
	f.DataOffset = int64(alignUp(uint64(rd.n), f.Alignment))
	return f, nil
}
