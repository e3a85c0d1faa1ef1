package push

import (
	"slices"
	"strconv"
	"strings"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/prometheus/prompb"
)

// remoteWrite encodes a batch as a Prometheus remote-write 1.0 request
// (the Prometheus project's own prompb types): a snappy-compressed
// WriteRequest. A histogram becomes its classic series: _bucket with an
// "le" label per bound and +Inf, _sum and _count.
func remoteWrite(b *Batch) ([]byte, error) {
	req := &prompb.WriteRequest{Timeseries: make([]prompb.TimeSeries, 0, b.Samples())}
	series := func(name string, ls []Label, v float64, at int64) {
		pl := make([]prompb.Label, 0, len(ls)+1)
		pl = append(pl, prompb.Label{Name: "__name__", Value: name})
		for _, l := range ls {
			pl = append(pl, prompb.Label{Name: promLabelName(l.Name), Value: l.Value})
		}
		// Sorted by the names Prometheus sees ("." is now "_"), as
		// remote-write requires.
		slices.SortFunc(pl[1:], func(a, b prompb.Label) int { return strings.Compare(a.Name, b.Name) })
		req.Timeseries = append(req.Timeseries, prompb.TimeSeries{Labels: pl, Samples: []prompb.Sample{{Value: v, Timestamp: at}}})
	}
	for i := range b.Points {
		p := &b.Points[i]
		series(p.Metric.Prom, labelsOf(b.Common, p.Labels), p.Value, p.AtMs)
	}
	for i := range b.Hists {
		h := &b.Hists[i]
		ls := labelsOf(b.Common, h.Labels)
		var cum uint64
		for j, bound := range h.Bounds {
			cum += h.Counts[j]
			series(h.Metric.Prom+"_bucket", withLE(ls, formatBound(bound)), float64(cum), h.AtMs)
		}
		series(h.Metric.Prom+"_bucket", withLE(ls, "+Inf"), float64(h.Count), h.AtMs)
		series(h.Metric.Prom+"_sum", ls, h.Sum, h.AtMs)
		series(h.Metric.Prom+"_count", ls, float64(h.Count), h.AtMs)
	}
	raw, err := req.Marshal()
	if err != nil {
		return nil, err
	}
	return snappy.Encode(nil, raw), nil
}

// withLE is ls with le=bound (series sorts the labels).
func withLE(ls []Label, bound string) []Label {
	return append(slices.Clone(ls), Label{"le", bound})
}

func strconvFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
