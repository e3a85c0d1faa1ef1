package workload

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// Think is a think-time setting: how long a session's user waits after an
// answer before sending the next turn. Its text form is a duration or a
// distribution in ParseDist's form whose values are durations:
//
//	2s, 1500ms, fixed:2s                  always that long
//	0                                     no think time
//	uniform:min=1s,max=5s                 every millisecond in [1s, 5s]
//	normal:mean=3s,sd=1s[,min=,max=]      rounded, clamped
//	lognormal:median=2s,p95=20s[,min=,max=]
//	lognormal:median=2s,sigma=1.2         (sigma has no unit)
//	empirical:FILE                        a CSV of milliseconds,count rows
//
// Draws are whole milliseconds in [1ms, 2^20 ms ≈ 17.5 min]: the value is
// a Dist in milliseconds, drawn as lengths are.
type Think struct {
	spec string
	dist Dist // in ms; Kind "" = no think time
}

// ParseThink reads a Think (see Think).
func ParseThink(s string) (Think, error) {
	var t Think
	return t, t.UnmarshalText([]byte(s))
}

// FixedThink is a Think of exactly d (rounded to ms; ≤ 0: none).
func FixedThink(d time.Duration) Think {
	ms := int(d.Round(time.Millisecond) / time.Millisecond)
	if ms <= 0 {
		return Think{spec: "0"}
	}
	return Think{spec: d.String(), dist: Fixed(ms)}
}

// Sample draws one think time (0 when there is none). t must be valid.
func (t *Think) Sample(rng *rand.Rand) time.Duration {
	if t.dist.Kind == "" {
		return 0
	}
	return time.Duration(t.dist.Sample(rng)) * time.Millisecond
}

// Mean is the expected think time.
func (t *Think) Mean() time.Duration {
	if t.dist.Kind == "" {
		return 0
	}
	return time.Duration(t.dist.Mean() * float64(time.Millisecond))
}

// String is the text form.
func (t Think) String() string {
	if t.spec == "" {
		return "0"
	}
	return t.spec
}

// MarshalText implements encoding.TextMarshaler.
func (t Think) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler (YAML and flags).
func (t *Think) UnmarshalText(b []byte) error {
	s := strings.TrimSpace(string(b))
	if s == "" || s == "0" {
		*t = Think{spec: "0"}
		return nil
	}
	kind, rest, hasKind := strings.Cut(s, ":")
	if !hasKind {
		ms, err := thinkMs("", s)
		if err != nil {
			return err
		}
		if ms == "0" {
			*t = Think{spec: s}
			return nil
		}
		kind, rest = KindFixed, ms
	} else if k := strings.ToLower(strings.TrimSpace(kind)); k != KindEmpirical {
		var parts []string
		for part := range strings.SplitSeq(rest, ",") {
			name, val, ok := strings.Cut(part, "=")
			if !ok {
				name, val = "", part
			}
			name = strings.TrimSpace(name)
			if strings.EqualFold(name, "sigma") {
				parts = append(parts, part)
				continue
			}
			ms, err := thinkMs(k+": "+orValue(name)+": ", val)
			if err != nil {
				return err
			}
			if name == "" {
				parts = append(parts, ms)
			} else {
				parts = append(parts, name+"="+ms)
			}
		}
		rest = strings.Join(parts, ",")
	}
	d, err := ParseDist(kind + ":" + rest)
	if err != nil {
		return fmt.Errorf("%w (think times in ms)", err)
	}
	*t = Think{spec: s, dist: d}
	return nil
}

// thinkMs turns a duration such as "2s" into its milliseconds as text.
func thinkMs(prefix, s string) (string, error) {
	s = strings.TrimSpace(s)
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return "", fmt.Errorf("%swant a duration such as 2s or 500ms, got %q", prefix, s)
	}
	ms := float64(d) / float64(time.Millisecond)
	return strconv.FormatFloat(ms, 'f', -1, 64), nil
}
