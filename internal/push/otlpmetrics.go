package push

import (
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	common "go.opentelemetry.io/proto/otlp/common/v1"
	metrics "go.opentelemetry.io/proto/otlp/metrics/v1"
	resource "go.opentelemetry.io/proto/otlp/resource/v1"
)

// otlpMetrics encodes a batch as an OTLP ExportMetricsServiceRequest
// (protobuf, for OTLP over HTTP): gauges as Gauge data points,
// histograms as cumulative explicit-bucket Histograms, every label an
// attribute, under one resource (service.name=surge) and one scope.
func otlpMetrics(b *Batch, version string) ([]byte, error) {
	byMetric := map[*Metric]*metrics.Metric{}
	var order []*metrics.Metric
	metric := func(m *Metric) *metrics.Metric {
		if om, ok := byMetric[m]; ok {
			return om
		}
		om := &metrics.Metric{Name: m.OTel, Unit: m.Unit, Description: m.Help}
		byMetric[m] = om
		order = append(order, om)
		return om
	}
	for i := range b.Points {
		p := &b.Points[i]
		om := metric(p.Metric)
		g := om.GetGauge()
		if g == nil {
			g = &metrics.Gauge{}
			om.Data = &metrics.Metric_Gauge{Gauge: g}
		}
		dp := &metrics.NumberDataPoint{
			Attributes:   attributes(labelsOf(b.Common, p.Labels)),
			TimeUnixNano: uint64(p.AtMs) * 1e6,
			Value:        &metrics.NumberDataPoint_AsDouble{AsDouble: p.Value},
		}
		if isStale(p.Value) { // the series ended: no recorded value
			dp.Value = &metrics.NumberDataPoint_AsDouble{}
			dp.Flags = uint32(metrics.DataPointFlags_DATA_POINT_FLAGS_NO_RECORDED_VALUE_MASK)
		}
		g.DataPoints = append(g.DataPoints, dp)
	}
	for i := range b.Hists {
		h := &b.Hists[i]
		om := metric(h.Metric)
		hg := om.GetHistogram()
		if hg == nil {
			hg = &metrics.Histogram{AggregationTemporality: metrics.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE}
			om.Data = &metrics.Metric_Histogram{Histogram: hg}
		}
		sum := h.Sum
		hg.DataPoints = append(hg.DataPoints, &metrics.HistogramDataPoint{
			Attributes:        attributes(labelsOf(b.Common, h.Labels)),
			StartTimeUnixNano: uint64(h.StartMs) * 1e6,
			TimeUnixNano:      uint64(h.AtMs) * 1e6,
			Count:             h.Count,
			Sum:               &sum,
			BucketCounts:      append([]uint64(nil), h.Counts...),
			ExplicitBounds:    h.Bounds,
		})
	}
	rm, err := proto.Marshal(&metrics.ResourceMetrics{
		Resource: &resource.Resource{Attributes: attributes([]Label{{"service.name", "surge"}, {"service.version", version}})},
		ScopeMetrics: []*metrics.ScopeMetrics{{
			Scope:   &common.InstrumentationScope{Name: "github.com/surge-bench/surge", Version: version},
			Metrics: order,
		}},
	})
	if err != nil {
		return nil, err // a label value that is not UTF-8
	}
	// ExportMetricsServiceRequest is field 1, repeated ResourceMetrics:
	// written here because the collector package links grpc and
	// grpc-gateway into surge for these same bytes (as internal/otlp
	// reads the trace request).
	out := protowire.AppendTag(nil, 1, protowire.BytesType)
	return protowire.AppendBytes(out, rm), nil
}

func attributes(ls []Label) []*common.KeyValue {
	out := make([]*common.KeyValue, 0, len(ls))
	for _, l := range ls {
		if l.Value == "" {
			continue
		}
		out = append(out, &common.KeyValue{Key: l.Name, Value: &common.AnyValue{Value: &common.AnyValue_StringValue{StringValue: l.Value}}})
	}
	return out
}
