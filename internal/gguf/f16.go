package gguf

import "math"

// F16 converts f to IEEE 754 half precision (binary16) bits, rounding to
// nearest, ties to even. Values beyond ±65504 (after rounding) become ±Inf,
// values below the smallest subnormal (2⁻²⁴) round to ±0, NaN stays NaN.
func F16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	mant := b & 0x7fffff
	switch {
	case exp == 0xff: // Inf or NaN
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	case exp-127 > 15: // overflow
		return sign | 0x7c00
	case exp-127 >= -14: // normal half
		e := uint32(exp-127+15) << 10
		m := mant >> 13
		h := e | m
		// Round to nearest even on the 13 dropped bits; a carry out of the
		// mantissa correctly bumps the exponent (up to Inf).
		rest := mant & 0x1fff
		if rest > 0x1000 || (rest == 0x1000 && h&1 == 1) {
			h++
		}
		return sign | uint16(h)
	case exp-127 >= -25: // subnormal half (or rounds up to the smallest one)
		full := mant | 0x800000 // implicit leading 1
		shift := uint32(-(exp - 127) - 14 + 13)
		h := full >> shift
		rest := full & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rest > half || (rest == half && h&1 == 1) {
			h++
		}
		return sign | uint16(h)
	}
	return sign // underflow to ±0
}

// F32FromF16 converts IEEE 754 half precision bits to a float32 (exactly).
func F32FromF16(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case exp != 0:
		return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
	case mant == 0:
		return math.Float32frombits(sign)
	}
	// Subnormal: mant × 2⁻²⁴.
	v := float32(mant) * (1.0 / (1 << 24))
	if sign != 0 {
		v = -v
	}
	return v
}
