package workload

import "strconv"

// Length is a length setting that replaces a profile's distribution: unset
// (the profile's), a fixed count, or a distribution in ParseDist's form.
// Its text form is what the user wrote; 0 and "" mean unset.
type Length struct {
	spec string
	dist Dist
}

// FixedLength is a Length of exactly n tokens (n ≤ 0: unset).
func FixedLength(n int) Length {
	if n <= 0 {
		return Length{}
	}
	return Length{spec: strconv.Itoa(n), dist: Fixed(n)}
}

// ParseLength reads a Length: "", "0", a token count or a distribution.
func ParseLength(s string) (Length, error) {
	var l Length
	return l, l.UnmarshalText([]byte(s))
}

// IsSet reports whether the Length replaces the profile's distribution.
func (l Length) IsSet() bool { return l.dist.Kind != "" }

// Dist is the distribution; valid when IsSet.
func (l Length) Dist() Dist { return l.dist }

// Fixed is the fixed count, or 0 when the Length is unset or a distribution.
func (l Length) Fixed() int {
	if l.dist.Kind == KindFixed {
		return l.dist.Value
	}
	return 0
}

// String is the text form, "0" when unset.
func (l Length) String() string {
	if l.spec == "" {
		return "0"
	}
	return l.spec
}

// MarshalText implements encoding.TextMarshaler.
func (l Length) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler (YAML and flags).
func (l *Length) UnmarshalText(b []byte) error {
	s := string(b)
	if s == "" || s == "0" {
		*l = Length{}
		return nil
	}
	d, err := ParseDist(s)
	if err != nil {
		return err
	}
	*l = Length{spec: s, dist: d}
	return nil
}
