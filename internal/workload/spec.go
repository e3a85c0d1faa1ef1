package workload

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
)

// z95 is the standard normal's 95th percentile: a lognormal with median m
// and 95th percentile p has σ = ln(p/m) / z95.
const z95 = 1.6448536269514722

// ParseDist reads a length distribution written the way users know their
// logs — a median and a p95, not a σ:
//
//	200                                  fixed 200
//	fixed:200                            the same
//	uniform:min=100,max=400              every integer in [100, 400]
//	normal:mean=500,sd=120[,min=,max=]   rounded, clamped to [min, max] (default [1, 2^20])
//	lognormal:median=800,p95=6000[,min=,max=]
//	lognormal:median=800,sigma=1.2[,min=,max=]
//	empirical:FILE                       a CSV of tokens,count rows (a histogram from logs)
//
// Errors name the part that is wrong, e.g. `lognormal: p95: must be above
// the median (800), got 600`.
func ParseDist(spec string) (Dist, error) {
	spec = strings.TrimSpace(spec)
	kind, rest, hasKind := strings.Cut(spec, ":")
	if !hasKind {
		v, err := strconv.Atoi(spec)
		if err != nil {
			return Dist{}, fmt.Errorf("want a token count such as 200 or a distribution such as lognormal:median=800,p95=6000, got %q", spec)
		}
		d := Fixed(v)
		return d, d.Validate()
	}
	kind = strings.ToLower(strings.TrimSpace(kind))
	if kind == KindEmpirical {
		return ReadEmpirical(strings.TrimSpace(rest))
	}
	m, err := parseParams(kind, rest)
	if err != nil {
		return Dist{}, err
	}
	ps := distParams{kind: kind, m: m}
	var d Dist
	switch kind {
	case KindFixed:
		d, err = ps.fixed()
	case KindUniform, KindNormal, KindLogNormal:
		d, err = ps.bounded()
	default:
		return Dist{}, fmt.Errorf("unknown distribution %q (want fixed, uniform, normal, lognormal or empirical)", kind)
	}
	if err != nil {
		return Dist{}, err
	}
	for name := range ps.m {
		if name == "" {
			return Dist{}, fmt.Errorf("%s: want name=value parameters, got %q", kind, rest)
		}
		return Dist{}, fmt.Errorf("%s: %s: not a parameter of %s", kind, name, kind)
	}
	if err := d.Validate(); err != nil {
		return Dist{}, fmt.Errorf("%s: %w", kind, err)
	}
	return d, nil
}

// distParams are the parameters of a distribution of this kind not yet
// read: each is taken out as it is read, so that those left over are the
// ones the kind does not have.
type distParams struct {
	kind string
	m    map[string]float64
}

// take reads the parameter name, and whether it was given.
func (ps distParams) take(name string) (float64, bool) {
	v, ok := ps.m[name]
	delete(ps.m, name)
	return v, ok
}

// whole reads the parameter name as a whole number of tokens; def when it
// was not given.
func (ps distParams) whole(name string, def int) (int, error) {
	v, ok := ps.take(name)
	if !ok {
		return def, nil
	}
	if v != math.Trunc(v) {
		return 0, fmt.Errorf("%s: %s: must be a whole number of tokens, got %s", ps.kind, name, plainNumber(v))
	}
	return int(v), nil
}

// fixed reads a fixed length: value=N, or a bare N.
func (ps distParams) fixed() (Dist, error) {
	v, err := ps.whole("value", 0)
	if err != nil {
		return Dist{}, err
	}
	if _, ok := ps.m[""]; ok { // fixed:200
		v, err = ps.whole("", 0)
		if err != nil {
			return Dist{}, err
		}
	}
	return Fixed(v), nil
}

// bounded reads a uniform, normal or lognormal distribution: its bounds
// min and max (required for uniform), then its kind's own parameters.
func (ps distParams) bounded() (Dist, error) {
	_, hasMin := ps.m["min"]
	_, hasMax := ps.m["max"]
	lo, err := ps.whole("min", 1)
	if err != nil {
		return Dist{}, err
	}
	hi, err := ps.whole("max", MaxPromptTokens)
	if err != nil {
		return Dist{}, err
	}
	d := Dist{Kind: ps.kind, Min: lo, Max: hi}
	switch ps.kind {
	case KindUniform:
		if !hasMin || !hasMax {
			return Dist{}, fmt.Errorf("uniform: min and max: required")
		}
	case KindNormal:
		mean, ok := ps.take("mean")
		if !ok {
			return Dist{}, errors.New("normal: mean: required")
		}
		sd, ok := ps.take("sd")
		if !ok {
			return Dist{}, errors.New("normal: sd: required")
		}
		d.MeanTokens, d.SD = mean, sd
	case KindLogNormal:
		if err := ps.lognormal(&d); err != nil {
			return Dist{}, err
		}
	}
	return d, nil
}

// lognormal reads a lognormal's median and its spread, given as a p95 or
// as sigma, into d.
func (ps distParams) lognormal(d *Dist) error {
	median, ok := ps.take("median")
	if !ok {
		return errors.New("lognormal: median: required")
	}
	if !(median > 0) { // before p95 makes a σ of it
		return fmt.Errorf("lognormal: median: must be > 0, got %s", plainNumber(median))
	}
	d.Median = median
	p95, hasP95 := ps.take("p95")
	sigma, hasSigma := ps.take("sigma")
	switch {
	case hasP95 && hasSigma:
		return errors.New("lognormal: give p95 or sigma, not both")
	case hasP95:
		if !(p95 > median) {
			return fmt.Errorf("lognormal: p95: must be above the median (%s), got %s", plainNumber(median), plainNumber(p95))
		}
		d.Sigma = math.Log(p95/median) / z95
	case hasSigma:
		d.Sigma = sigma
	default:
		return errors.New("lognormal: p95 (or sigma): required")
	}
	return nil
}

// parseParams reads "a=1,b=2" (or a bare "200" as the parameter "").
func parseParams(kind, s string) (map[string]float64, error) {
	out := map[string]float64{}
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, val, ok := strings.Cut(part, "=")
		if !ok {
			name, val = "", part
		}
		name = strings.ToLower(strings.TrimSpace(name))
		v, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%s: %s: want a number, got %q", kind, orValue(name), strings.TrimSpace(val))
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("%s: %s: given twice", kind, orValue(name))
		}
		out[name] = v
	}
	return out, nil
}

func orValue(name string) string {
	if name == "" {
		return "value"
	}
	return name
}

// ReadEmpirical reads a histogram CSV exported from logs: rows of
// tokens,count (a header row is allowed), tokens in [1, 2^20], counts ≥ 0,
// at least one count > 0. Rows of one length are added up. Errors name the
// file and its line, e.g. `empirical: hist.csv:3: tokens: not an integer (a
// 5-byte text, not shown)`; a cell's text is never shown (a histogram is
// numbers, but a wrong file given by mistake may hold prompts).
func ReadEmpirical(path string) (Dist, error) {
	if path == "" {
		return Dist{}, errors.New("empirical: want empirical:FILE (a CSV of tokens,count rows)")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return Dist{}, fmt.Errorf("empirical: %w", err)
	}
	d, err := parseEmpirical(b, path)
	if err != nil {
		return Dist{}, fmt.Errorf("empirical: %w", err)
	}
	return d, nil
}

func parseEmpirical(b []byte, name string) (Dist, error) {
	r := csv.NewReader(bytes.NewReader(b))
	r.FieldsPerRecord = -1
	r.TrimLeadingSpace = true
	counts := map[int]int64{}
	for first := true; ; first = false {
		row, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return Dist{}, fmt.Errorf("%s:%d: %v", name, pe.Line, pe.Err)
			}
			return Dist{}, fmt.Errorf("%s: %w", name, err)
		}
		line, _ := r.FieldPos(0)
		if len(row) == 1 && strings.TrimSpace(row[0]) == "" {
			continue
		}
		if len(row) != 2 {
			return Dist{}, fmt.Errorf("%s:%d: want tokens,count, got %d fields", name, line, len(row))
		}
		tokText, nText := strings.TrimSpace(row[0]), strings.TrimSpace(row[1])
		tok, err1 := strconv.Atoi(tokText)
		n, err2 := strconv.ParseInt(nText, 10, 64)
		if err1 != nil || err2 != nil {
			if first { // a header
				continue
			}
			if err1 != nil {
				return Dist{}, fmt.Errorf("%s:%d: tokens: %s", name, line, notWhole(tokText))
			}
			return Dist{}, fmt.Errorf("%s:%d: count: %s", name, line, notWhole(nText))
		}
		if tok < 1 || tok > MaxPromptTokens {
			return Dist{}, fmt.Errorf("%s:%d: tokens: must be in [1, %d], got %d", name, line, MaxPromptTokens, tok)
		}
		if n < 0 {
			return Dist{}, fmt.Errorf("%s:%d: count: must be >= 0, got %d", name, line, n)
		}
		counts[tok] += n
	}
	d := Dist{Kind: KindEmpirical}
	for _, tok := range slices.Sorted(maps.Keys(counts)) {
		if counts[tok] > 0 {
			d.Values = append(d.Values, tok)
			d.Counts = append(d.Counts, counts[tok])
		}
	}
	if len(d.Values) == 0 {
		return Dist{}, fmt.Errorf("%s: no row with a count > 0", name)
	}
	if err := d.Validate(); err != nil {
		return Dist{}, fmt.Errorf("%s: %w", name, err)
	}
	return d, nil
}

// notWhole describes s, which is not a whole number, for an error: the
// number when it is one (12.5), only its length otherwise (it may be text
// from a wrong file).
func notWhole(s string) string {
	if s == "" {
		return "missing value"
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
		if f == math.Trunc(f) {
			return "want plain digits, got " + plainNumber(f)
		}
		return "not a whole number, got " + plainNumber(f)
	}
	return fmt.Sprintf("not a whole number (a %d-byte text, not shown)", len(s))
}

// plainNumber formats f for an error without an exponent: 99999999999,
// not 9.9999999999e+10.
func plainNumber(f float64) string {
	return strconv.FormatFloat(f, 'f', -1, 64)
}
