package scrape

import (
	"io"
	"math"
	"slices"
	"sort"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Families is a parsed exposition: metric families by name.
type Families map[string]*dto.MetricFamily

// ParseText parses the Prometheus text exposition format (version 0.0.4;
// UTF-8 metric names such as vLLM's "vllm:..." are accepted).
func ParseText(r io.Reader) (Families, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, err
	}
	return Families(fams), nil
}

// lookup returns the family for name and the name under which it was found.
// Counters are also tried with the "_total" suffix added or removed.
func (f Families) lookup(name string, kind Kind) (*dto.MetricFamily, string) {
	if mf := f[name]; mf != nil {
		return mf, name
	}
	if kind != KindCounter {
		return nil, ""
	}
	alt := name + "_total"
	if base, ok := strings.CutSuffix(name, "_total"); ok {
		alt = base
	}
	if mf := f[alt]; mf != nil {
		return mf, alt
	}
	return nil, ""
}

// selector is a metric name as a Spec gives it: a family name, optionally
// with label matchers, `family{label="value",…}`. Only series that carry
// every label with that value are read.
type selector struct {
	family string
	labels map[string]string
}

// parseSelector splits `family{a="x",b="y"}` (quotes optional). A name
// without braces is a plain family.
func parseSelector(s string) selector {
	fam, rest, ok := strings.Cut(s, "{")
	if !ok {
		return selector{family: s}
	}
	sel := selector{family: fam, labels: map[string]string{}}
	for pair := range strings.SplitSeq(strings.TrimSuffix(rest, "}"), ",") {
		k, v, ok := strings.Cut(pair, "=")
		if !ok {
			continue
		}
		sel.labels[strings.TrimSpace(k)] = strings.Trim(strings.TrimSpace(v), `"`)
	}
	return sel
}

// has reports whether m carries every label of the selector.
func (sel selector) has(m *dto.Metric) bool {
	n := 0
	for _, lp := range m.GetLabel() {
		if want, ok := sel.labels[lp.GetName()]; ok {
			if lp.GetValue() != want {
				return false
			}
			n++
		}
	}
	return n == len(sel.labels)
}

// found is a family found for a Spec: the family, the name it was found
// under (with its selector, as the Spec wrote it) and the selector.
type found struct {
	mf   *dto.MetricFamily
	name string
	sel  selector
	// count is the count counter of a CountNames histogram.
	count *found
}

// find returns the first family of spec present in f (with a series its
// selector matches), or nil.
func (f Families) find(spec Spec, kind Kind) *found {
	lookKind := kind
	if kind == KindHistogram && len(spec.CountNames) > 0 {
		lookKind = KindCounter
	}
	var sum *found
	for _, n := range spec.Names {
		if fd := f.findOne(n, lookKind); fd != nil {
			sum = fd
			break
		}
	}
	if sum == nil || lookKind == kind {
		return sum
	}
	for _, n := range spec.CountNames {
		if fd := f.findOne(n, KindCounter); fd != nil {
			sum.count = fd
			return sum
		}
	}
	return nil
}

func (f Families) findOne(n string, kind Kind) *found {
	sel := parseSelector(n)
	mf, name := f.lookup(sel.family, kind)
	if mf == nil || !usable(mf, kind) {
		return nil
	}
	if len(sel.labels) > 0 {
		if !slices.ContainsFunc(mf.GetMetric(), sel.has) {
			return nil
		}
		name = n
	}
	return &found{mf: mf, name: name, sel: sel}
}

// usable reports whether a family of this type can feed a logical metric of
// the given kind: gauges from gauges/untyped/counters, counters also from a
// histogram's or summary's _sum, histograms from histograms or summaries
// (count and sum only).
func usable(mf *dto.MetricFamily, kind Kind) bool {
	t := mf.GetType()
	switch kind {
	case KindGauge:
		return t == dto.MetricType_GAUGE || t == dto.MetricType_UNTYPED || t == dto.MetricType_COUNTER
	case KindCounter:
		return t != dto.MetricType_GAUGE_HISTOGRAM
	case KindHistogram:
		return t == dto.MetricType_HISTOGRAM || t == dto.MetricType_GAUGE_HISTOGRAM || t == dto.MetricType_SUMMARY
	}
	return false
}

// matches reports whether a series passes the label filter: a series that
// carries a filtered label with another value is skipped; a series without
// that label is kept.
func matches(m *dto.Metric, filter map[string]string) bool {
	if len(filter) == 0 {
		return true
	}
	for _, lp := range m.GetLabel() {
		if want, ok := filter[lp.GetName()]; ok && lp.GetValue() != want {
			return false
		}
	}
	return true
}

// scalar sums (or, for kv_usage, averages) the value of every matching
// series of mf. NaN series are skipped. ok is false when no series counted.
func scalar(mf *dto.MetricFamily, sel selector, filter map[string]string, mean bool) (v float64, ok bool) {
	n := 0
	for _, m := range mf.GetMetric() {
		if !matches(m, filter) || !sel.has(m) {
			continue
		}
		var x float64
		switch mf.GetType() {
		case dto.MetricType_GAUGE:
			x = m.GetGauge().GetValue()
		case dto.MetricType_COUNTER:
			x = m.GetCounter().GetValue()
		case dto.MetricType_HISTOGRAM:
			x = m.GetHistogram().GetSampleSum()
		case dto.MetricType_SUMMARY:
			x = m.GetSummary().GetSampleSum()
		default:
			x = m.GetUntyped().GetValue()
		}
		if math.IsNaN(x) {
			continue
		}
		v += x
		n++
	}
	if n == 0 {
		return math.NaN(), false
	}
	if mean {
		v /= float64(n)
	}
	return v, true
}

// histogram sums the matching series of a histogram (or summary) family
// bucket-wise. Series with different bucket layouts are summed over the
// bounds they have in common, which is exact for those bounds.
func histogram(mf *dto.MetricFamily, sel selector, filter map[string]string) (Hist, bool) {
	var h Hist
	acc := map[float64]float64{}
	seen := map[float64]int{}
	series := 0
	summary := mf.GetType() == dto.MetricType_SUMMARY
	for _, m := range mf.GetMetric() {
		if !matches(m, filter) || !sel.has(m) {
			continue
		}
		series++
		if summary {
			s := m.GetSummary()
			h.Count += float64(s.GetSampleCount())
			h.Sum += s.GetSampleSum()
			continue
		}
		dh := m.GetHistogram()
		c := count(dh.GetSampleCount(), dh.GetSampleCountFloat())
		h.Count += c
		h.Sum += dh.GetSampleSum()
		inf := false
		for _, b := range dh.GetBucket() {
			ub := b.GetUpperBound()
			if math.IsInf(ub, 1) {
				inf = true
			}
			acc[ub] += count(b.GetCumulativeCount(), b.GetCumulativeCountFloat())
			seen[ub]++
		}
		if !inf {
			acc[math.Inf(1)] += c
			seen[math.Inf(1)]++
		}
	}
	if series == 0 {
		return Hist{}, false
	}
	if summary {
		return h, true
	}
	for ub, n := range seen {
		if n == series {
			h.Bounds = append(h.Bounds, ub)
		}
	}
	sort.Float64s(h.Bounds)
	h.Counts = make([]float64, len(h.Bounds))
	for i, ub := range h.Bounds {
		h.Counts[i] = acc[ub]
	}
	return h, true
}

// counterHist reads a histogram from a sum counter and a count counter
// (Spec.CountNames): no buckets, Sum in seconds.
func counterHist(fd *found, scale float64, filter map[string]string) (Hist, bool) {
	if scale == 0 {
		scale = 1
	}
	sum, ok := scalar(fd.mf, fd.sel, filter, false)
	if !ok {
		return Hist{}, false
	}
	n, ok := scalar(fd.count.mf, fd.count.sel, filter, false)
	if !ok {
		return Hist{}, false
	}
	return Hist{Count: n, Sum: sum * scale}, true
}

func count(i uint64, f float64) float64 {
	if f != 0 {
		return f
	}
	return float64(i)
}

// extractor turns parsed families into Samples for one preset. It keeps the
// little state that spans scrapes: bucket layouts shared between samples to
// save memory, and whether kv_usage turned out to be a percentage.
type extractor struct {
	preset    Preset
	filter    map[string]string
	kvPercent bool                  // kv_usage seen above 1: treat as 0..100 from then on
	bounds    [numMetrics][]float64 // last bucket layout per histogram metric
	used      [numMetrics]string    // the engine name each metric was last found under
	ever      Set                   // metrics found in at least one scrape
}

// extract builds the Sample at tNs from fams. found is the set of mapped
// metrics present; percentNow is true when this scrape switched kv_usage to
// percent mode.
func (e *extractor) extract(tNs int64, fams Families) (s Sample, percentNow bool) {
	s = EmptySample(tNs)
	for m, spec := range e.preset.Specs {
		kind := m.Kind()
		fd := fams.find(spec, kind)
		if fd == nil {
			continue
		}
		mf, name := fd.mf, fd.name
		switch {
		case kind == KindHistogram && fd.count != nil:
			h, ok := counterHist(fd, spec.SumScale, e.filter)
			if !ok {
				continue
			}
			s.setHist(m, h)
		case kind == KindHistogram:
			h, ok := histogram(mf, fd.sel, e.filter)
			if !ok {
				continue
			}
			if prev := e.bounds[m]; slices.Equal(prev, h.Bounds) {
				h.Bounds = prev
			} else {
				e.bounds[m] = h.Bounds
			}
			s.setHist(m, h)
		default:
			v, ok := scalar(mf, fd.sel, e.filter, m == KVUsage)
			if !ok {
				continue
			}
			if m == KVUsage {
				if !spec.Percent && !e.kvPercent && v > 1 {
					e.kvPercent, percentNow = true, true
				}
				if spec.Percent || e.kvPercent {
					v /= 100
				}
			}
			s.set(m, v)
		}
		e.used[m] = name
		e.ever = e.ever.With(m)
	}
	return s, percentNow
}

// score counts the logical metrics of p present in fams (auto-detection).
func score(p Preset, fams Families) int {
	n := 0
	for m, spec := range p.Specs {
		if fams.find(spec, m.Kind()) != nil {
			n++
		}
	}
	return n
}

// detect returns the built-in preset that matches fams best and its score;
// ties go to the earlier preset in the list.
func detect(fams Families) (Preset, int) {
	best, bestN := presets[0], -1
	for _, p := range presets {
		if n := score(p, fams); n > bestN {
			best, bestN = p, n
		}
	}
	return best.clone(), bestN
}
