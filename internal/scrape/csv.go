package scrape

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// CSVHeader is the header of engine.csv. Cells of metrics unavailable in a
// sample are empty. Counters and histogram counts/sums are cumulative, as
// the engine exports them. A *_buckets cell lists the cumulative buckets as
// space-separated "le:count" pairs ("0.3:20 0.5:40 +Inf:85"), so that
// per-phase quantiles can be recomputed from the file alone.
var CSVHeader = []string{
	"t_s", "waiting", "running", "kv_usage", "replicas",
	"queue_time_count", "queue_time_sum",
	"prompt_tokens", "generation_tokens", "success",
	"ttft_count", "ttft_sum", "e2e_count", "e2e_sum",
	"queue_time_buckets", "ttft_buckets", "e2e_buckets",
	"replicas_starting",
}

// CSVWriter streams samples to engine.csv, flushing after each one so the
// file is useful even if the run is killed. The header is written with the
// first sample.
type CSVWriter struct {
	w      *csv.Writer
	under  io.Writer
	header bool
	row    []string
}

// NewCSVWriter returns a CSVWriter writing to w.
func NewCSVWriter(w io.Writer) *CSVWriter {
	return &CSVWriter{w: csv.NewWriter(w), under: w, row: make([]string, len(CSVHeader))}
}

// Write writes one sample as a CSV row (and the header before the first)
// and flushes it to the underlying writer (calling its Flush method too, if
// it has one).
func (c *CSVWriter) Write(s Sample) error {
	if !c.header {
		if err := c.w.Write(CSVHeader); err != nil {
			return fmt.Errorf("scrape: engine.csv: %w", err)
		}
		c.header = true
	}
	r := c.row[:0]
	r = append(r, strconv.FormatFloat(float64(s.TNs)/1e9, 'f', 3, 64))
	for _, m := range []Metric{Waiting, Running, KVUsage, Replicas} {
		r = append(r, cell(s.Value(m)))
	}
	r = appendHist(r, &s, QueueTime)
	for _, m := range []Metric{PromptTokens, GenerationTokens, Success} {
		r = append(r, cell(s.Value(m)))
	}
	r = appendHist(r, &s, TTFT)
	r = appendHist(r, &s, E2E)
	for _, m := range []Metric{QueueTime, TTFT, E2E} {
		r = append(r, buckets(s.Hist(m)))
	}
	r = append(r, cell(s.Value(ReplicasStarting)))
	c.row = r
	if err := c.w.Write(r); err != nil {
		return fmt.Errorf("scrape: engine.csv: %w", err)
	}
	c.w.Flush()
	if err := c.w.Error(); err != nil {
		return fmt.Errorf("scrape: engine.csv: %w", err)
	}
	if f, ok := c.under.(interface{ Flush() error }); ok {
		if err := f.Flush(); err != nil {
			return fmt.Errorf("scrape: engine.csv: %w", err)
		}
	}
	return nil
}

func appendHist(r []string, s *Sample, m Metric) []string {
	h := s.Hist(m)
	if h == nil {
		return append(r, "", "")
	}
	return append(r, num(h.Count), num(h.Sum))
}

func cell(v float64, ok bool) string {
	if !ok {
		return ""
	}
	return num(v)
}

func num(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func buckets(h *Hist) string {
	if h == nil || len(h.Bounds) == 0 {
		return ""
	}
	var b strings.Builder
	for i, ub := range h.Bounds {
		if i > 0 {
			b.WriteByte(' ')
		}
		if math.IsInf(ub, 1) {
			b.WriteString("+Inf")
		} else {
			b.WriteString(num(ub))
		}
		b.WriteByte(':')
		b.WriteString(num(h.Counts[i]))
	}
	return b.String()
}

// ReadCSV reads samples written by CSVWriter (for re-rendering a report
// from a run folder). Columns are found by header name; unknown columns are
// ignored and missing ones leave the metric unavailable. Times are rounded
// to the millisecond precision of the file.
func ReadCSV(r io.Reader) ([]Sample, error) {
	cr := csv.NewReader(r)
	cr.ReuseRecord = true
	head, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("scrape: engine.csv: %w", err)
	}
	col := map[string]int{}
	for i, h := range head {
		col[h] = i
	}
	if _, ok := col["t_s"]; !ok {
		return nil, fmt.Errorf("scrape: engine.csv: no t_s column")
	}
	var out []Sample
	var layouts [numMetrics][]float64 // bucket layouts shared between rows
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("scrape: engine.csv: %w", err)
		}
		s, err := parseRow(rec, col)
		if err != nil {
			return nil, fmt.Errorf("scrape: engine.csv line %d: %w", line, err)
		}
		for _, m := range []Metric{QueueTime, TTFT, E2E} {
			if h := s.Hist(m); h != nil && h.Bounds != nil {
				if slices.Equal(layouts[m], h.Bounds) {
					h.Bounds = layouts[m]
				} else {
					layouts[m] = h.Bounds
				}
			}
		}
		out = append(out, s)
	}
}

func parseRow(rec []string, col map[string]int) (Sample, error) {
	get := func(name string) (float64, bool, error) {
		i, ok := col[name]
		if !ok || i >= len(rec) || rec[i] == "" {
			return 0, false, nil
		}
		v, err := strconv.ParseFloat(rec[i], 64)
		if err != nil {
			return 0, false, fmt.Errorf("column %s: invalid number %q", name, rec[i])
		}
		return v, true, nil
	}
	t, ok, err := get("t_s")
	if err != nil {
		return Sample{}, err
	}
	if !ok {
		return Sample{}, fmt.Errorf("column t_s: empty")
	}
	s := EmptySample(int64(math.Round(t * 1e9)))
	for _, m := range []Metric{Waiting, Running, KVUsage, Replicas, ReplicasStarting, PromptTokens, GenerationTokens, Success} {
		v, ok, err := get(m.String())
		if err != nil {
			return Sample{}, err
		}
		if ok {
			s.set(m, v)
		}
	}
	for _, m := range []Metric{QueueTime, TTFT, E2E} {
		n := m.String()
		c, okC, err := get(n + "_count")
		if err != nil {
			return Sample{}, err
		}
		sum, okS, err := get(n + "_sum")
		if err != nil {
			return Sample{}, err
		}
		if !okC || !okS {
			continue
		}
		h := Hist{Count: c, Sum: sum}
		if i, ok := col[n+"_buckets"]; ok && i < len(rec) && rec[i] != "" {
			if h.Bounds, h.Counts, err = parseBuckets(rec[i]); err != nil {
				return Sample{}, fmt.Errorf("column %s_buckets: %w", n, err)
			}
		}
		s.setHist(m, h)
	}
	return s, nil
}

func parseBuckets(cell string) (bounds, counts []float64, err error) {
	for f := range strings.FieldsSeq(cell) {
		le, c, ok := strings.Cut(f, ":")
		if !ok {
			return nil, nil, fmt.Errorf("bucket %q: want le:count", f)
		}
		ub, err := strconv.ParseFloat(le, 64) // accepts "+Inf"
		if err != nil {
			return nil, nil, fmt.Errorf("bucket %q: invalid bound", f)
		}
		n, err := strconv.ParseFloat(c, 64)
		if err != nil {
			return nil, nil, fmt.Errorf("bucket %q: invalid count", f)
		}
		if len(bounds) > 0 && ub <= bounds[len(bounds)-1] {
			return nil, nil, fmt.Errorf("bucket %q: bounds not ascending", f)
		}
		bounds, counts = append(bounds, ub), append(counts, n)
	}
	return bounds, counts, nil
}
