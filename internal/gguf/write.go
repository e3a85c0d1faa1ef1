package gguf

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
)

// Tensor is a tensor to write: its name, dimensions (contiguous first) and
// element type, and Data, which must write exactly the tensor's size in bytes.
type Tensor struct {
	Name string
	Dims []uint64
	Type Type
	Data func(w io.Writer) error
}

// info returns the tensor's description without an offset.
func (t Tensor) info() TensorInfo { return TensorInfo{Name: t.Name, Dims: t.Dims, Type: t.Type} }

// Layout assigns each tensor an offset in the data section: tensors follow
// each other in order, each starting at the next multiple of align.
func Layout(tensors []Tensor, align uint64) ([]TensorInfo, error) {
	infos := make([]TensorInfo, len(tensors))
	var off uint64
	for i, t := range tensors {
		info := t.info()
		n, ok := info.Bytes()
		if !ok {
			return nil, fmt.Errorf("gguf: tensor %q: unknown type %v", t.Name, t.Type)
		}
		if len(t.Dims) == 0 || len(t.Dims) > 4 {
			return nil, fmt.Errorf("gguf: tensor %q: %d dimensions, want 1 to 4", t.Name, len(t.Dims))
		}
		off = alignUp(off, align)
		info.Offset = off
		infos[i] = info
		off += uint64(n)
	}
	return infos, nil
}

// alignmentOf returns general.alignment from kv, or DefaultAlignment.
func alignmentOf(kv []KV) (uint64, error) {
	for _, e := range kv {
		if e.Key != "general.alignment" {
			continue
		}
		a, ok := e.Value.(uint32)
		if !ok || a == 0 || a%8 != 0 {
			return 0, fmt.Errorf("gguf: general.alignment must be a uint32 multiple of 8, got %v (%T)", e.Value, e.Value)
		}
		return uint64(a), nil
	}
	return DefaultAlignment, nil
}

// encodeHeader returns the header (magic to the last tensor info), unpadded.
func encodeHeader(kv []KV, infos []TensorInfo) ([]byte, error) {
	b := make([]byte, 0, 1<<16)
	b = append(b, Magic...)
	b = binary.LittleEndian.AppendUint32(b, Version)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(infos)))
	b = binary.LittleEndian.AppendUint64(b, uint64(len(kv)))
	seen := make(map[string]bool, len(kv))
	for _, e := range kv {
		if seen[e.Key] {
			return nil, fmt.Errorf("gguf: duplicate key %q", e.Key)
		}
		seen[e.Key] = true
		b = appendString(b, e.Key)
		var err error
		if b, err = appendValue(b, e.Value); err != nil {
			return nil, fmt.Errorf("gguf: key %q: %w", e.Key, err)
		}
	}
	for _, t := range infos {
		b = appendString(b, t.Name)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(t.Dims)))
		for _, d := range t.Dims {
			b = binary.LittleEndian.AppendUint64(b, d)
		}
		b = binary.LittleEndian.AppendUint32(b, uint32(t.Type))
		b = binary.LittleEndian.AppendUint64(b, t.Offset)
	}
	return b, nil
}

func appendString(b []byte, s string) []byte {
	b = binary.LittleEndian.AppendUint64(b, uint64(len(s)))
	return append(b, s...)
}

// appendValue appends a value's type tag and encoding.
func appendValue(b []byte, v any) ([]byte, error) {
	le := binary.LittleEndian
	switch v := v.(type) {
	case uint8:
		return append(le.AppendUint32(b, uint32(ValueUint8)), v), nil
	case int8:
		return append(le.AppendUint32(b, uint32(ValueInt8)), byte(v)), nil
	case uint16:
		return le.AppendUint16(le.AppendUint32(b, uint32(ValueUint16)), v), nil
	case int16:
		return le.AppendUint16(le.AppendUint32(b, uint32(ValueInt16)), uint16(v)), nil
	case uint32:
		return le.AppendUint32(le.AppendUint32(b, uint32(ValueUint32)), v), nil
	case int32:
		return le.AppendUint32(le.AppendUint32(b, uint32(ValueInt32)), uint32(v)), nil
	case float32:
		return le.AppendUint32(le.AppendUint32(b, uint32(ValueFloat32)), math.Float32bits(v)), nil
	case bool:
		var x byte
		if v {
			x = 1
		}
		return append(le.AppendUint32(b, uint32(ValueBool)), x), nil
	case string:
		return appendString(le.AppendUint32(b, uint32(ValueString)), v), nil
	case uint64:
		return le.AppendUint64(le.AppendUint32(b, uint32(ValueUint64)), v), nil
	case int64:
		return le.AppendUint64(le.AppendUint32(b, uint32(ValueInt64)), uint64(v)), nil
	case float64:
		return le.AppendUint64(le.AppendUint32(b, uint32(ValueFloat64)), math.Float64bits(v)), nil
	case []string:
		b = appendArrayHeader(b, ValueString, len(v))
		for _, s := range v {
			b = appendString(b, s)
		}
		return b, nil
	case []float32:
		b = appendArrayHeader(b, ValueFloat32, len(v))
		for _, x := range v {
			b = le.AppendUint32(b, math.Float32bits(x))
		}
		return b, nil
	case []int32:
		b = appendArrayHeader(b, ValueInt32, len(v))
		for _, x := range v {
			b = le.AppendUint32(b, uint32(x))
		}
		return b, nil
	case []uint32:
		b = appendArrayHeader(b, ValueUint32, len(v))
		for _, x := range v {
			b = le.AppendUint32(b, x)
		}
		return b, nil
	}
	return nil, fmt.Errorf("unsupported value type %T", v)
}

func appendArrayHeader(b []byte, elem ValueType, n int) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(ValueArray))
	b = binary.LittleEndian.AppendUint32(b, uint32(elem))
	return binary.LittleEndian.AppendUint64(b, uint64(n))
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

var zeros [256]byte

// pad writes zero bytes until c.n is a multiple of align.
func (c *countingWriter) pad(align uint64) error {
	for rem := int64(alignUp(uint64(c.n), align)) - c.n; rem > 0; {
		k := min(rem, int64(len(zeros)))
		if _, err := c.Write(zeros[:k]); err != nil {
			return err
		}
		rem -= k
	}
	return nil
}

// Write writes a GGUF v3 file: the metadata in order, then the tensors laid
// out by Layout at the file's alignment (general.alignment from kv, else
// DefaultAlignment). It returns the number of bytes written.
func Write(w io.Writer, kv []KV, tensors []Tensor) (int64, error) {
	align, err := alignmentOf(kv)
	if err != nil {
		return 0, err
	}
	infos, err := Layout(tensors, align)
	if err != nil {
		return 0, err
	}
	header, err := encodeHeader(kv, infos)
	if err != nil {
		return 0, err
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	cw := &countingWriter{w: bw}
	if _, err := cw.Write(header); err != nil {
		return cw.n, fmt.Errorf("gguf: write header: %w", err)
	}
	if err := cw.pad(align); err != nil {
		return cw.n, fmt.Errorf("gguf: write header: %w", err)
	}
	dataStart := cw.n
	for i, t := range tensors {
		if err := cw.pad(align); err != nil {
			return cw.n, fmt.Errorf("gguf: tensor %q: %w", t.Name, err)
		}
		if got := cw.n - dataStart; got != int64(infos[i].Offset) {
			return cw.n, fmt.Errorf("gguf: tensor %q: at offset %d, layout says %d", t.Name, got, infos[i].Offset)
		}
		want, _ := infos[i].Bytes()
		before := cw.n
		if err := t.Data(cw); err != nil {
			return cw.n, fmt.Errorf("gguf: tensor %q: %w", t.Name, err)
		}
		if got := cw.n - before; got != want {
			return cw.n, fmt.Errorf("gguf: tensor %q: data wrote %d bytes, want %d", t.Name, got, want)
		}
	}
	if err := bw.Flush(); err != nil {
		return cw.n, fmt.Errorf("gguf: flush: %w", err)
	}
	return cw.n, nil
}

// fileSize returns the size of the file Write would produce.
func fileSize(kv []KV, tensors []Tensor) (int64, error) {
	align, err := alignmentOf(kv)
	if err != nil {
		return 0, err
	}
	infos, err := Layout(tensors, align)
	if err != nil {
		return 0, err
	}
	header, err := encodeHeader(kv, infos)
	if err != nil {
		return 0, err
	}
	size := alignUp(uint64(len(header)), align)
	if n := len(infos); n > 0 {
		last, _ := infos[n-1].Bytes()
		size += infos[n-1].Offset + uint64(last)
	}
	return int64(size), nil
}
