package push

import (
	"math"
	"slices"
	"strings"
)

// Label is one name=value pair of a series.
type Label struct{ Name, Value string }

// Metric describes one pushed metric: its Prometheus name, its
// OpenTelemetry name and unit (UCUM, as OTLP wants it), and its help.
type Metric struct {
	Prom string // e.g. surge_goodput_rps, gen_ai_client_operation_duration_seconds
	OTel string // e.g. surge.goodput_rps, gen_ai.client.operation.duration
	Unit string // e.g. "s", "{request}/s", "{token}", "1"
	Help string
}

// Point is one gauge value of a metric at one time (milliseconds since
// the Unix epoch).
type Point struct {
	Metric *Metric
	Labels []Label // besides the batch's common labels
	Value  float64
	AtMs   int64
}

// Hist is a cumulative histogram with explicit bucket bounds: Counts has
// one count per bound (values ≤ that bound and above the one before) and
// one more for the values above the last bound.
type Hist struct {
	Metric  *Metric
	Labels  []Label
	Bounds  []float64
	Counts  []uint64
	Sum     float64
	Count   uint64
	StartMs int64 // when counting began (the run's origin)
	AtMs    int64
}

// Batch is what one push sends: gauges and histograms, each with the
// labels common to the batch (run id, command, run, …).
type Batch struct {
	Common []Label
	Points []Point
	Hists  []Hist
}

// Samples is the number of Prometheus samples the batch makes: one per
// point and, per histogram, one per bucket (+Inf included), its sum and
// its count.
func (b *Batch) Samples() int {
	n := len(b.Points)
	for i := range b.Hists {
		n += len(b.Hists[i].Bounds) + 3
	}
	return n
}

// labelsOf is common and own merged, own winning, sorted by name and
// without empty values (Prometheus drops an empty label; OTLP keeps
// attributes only when set).
func labelsOf(common, own []Label) []Label {
	out := make([]Label, 0, len(common)+len(own))
	for _, l := range common {
		if l.Value != "" && !hasLabel(own, l.Name) {
			out = append(out, l)
		}
	}
	for _, l := range own {
		if l.Value != "" {
			out = append(out, l)
		}
	}
	slices.SortFunc(out, func(a, b Label) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func hasLabel(ls []Label, name string) bool {
	for _, l := range ls {
		if l.Name == name {
			return true
		}
	}
	return false
}

// promLabelName is an OpenTelemetry attribute name as a Prometheus label
// name: dots (gen_ai.token.type) become underscores.
func promLabelName(s string) string { return strings.ReplaceAll(s, ".", "_") }

// formatBound is a bucket bound as Prometheus writes its "le" label.
func formatBound(f float64) string {
	if math.IsInf(f, 1) {
		return "+Inf"
	}
	return strconvFloat(f)
}
