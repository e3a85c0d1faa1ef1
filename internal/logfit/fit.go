package logfit

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/surge-bench/surge/internal/workload"
)

// Minute is one minute of the log's arrivals.
type Minute struct {
	Start    float64 // seconds after the first timestamp
	Requests int64
	Partial  bool // the last minute, which ends at the last request
}

// Rates is the arrival rate of a log with timestamps (see the package doc).
type Rates struct {
	First    float64  // the earliest timestamp, seconds
	Span     float64  // last − first timestamp, seconds
	Minutes  []Minute // from the first timestamp on
	Baseline float64  // median full-minute rate, requests/s
	Peak     float64  // largest full-minute rate, requests/s
	PeakAt   float64  // start of the peak minute, seconds after the first timestamp
}

// PeakMultiplier is Peak / Baseline (0 without a baseline).
func (r *Rates) PeakMultiplier() float64 {
	if r.Baseline <= 0 {
		return 0
	}
	return r.Peak / r.Baseline
}

// Rates computes the arrival rate by minute; ok is false when the log has
// no timestamps.
func (f *Fit) Rates() (Rates, bool) {
	if len(f.Times) == 0 {
		return Rates{}, false
	}
	lo, hi := slices.Min(f.Times), slices.Max(f.Times)
	r := Rates{First: lo, Span: hi - lo}
	n := int(math.Floor(r.Span/60)) + 1
	r.Minutes = make([]Minute, n)
	for i := range r.Minutes {
		r.Minutes[i].Start = 60 * float64(i)
	}
	for _, t := range f.Times {
		r.Minutes[min(int((t-lo)/60), n-1)].Requests++
	}
	r.Minutes[n-1].Partial = true
	if n == 1 {
		r.Baseline = float64(r.Minutes[0].Requests) / max(r.Span, 1)
		r.Peak = r.Baseline
		return r, true
	}
	var full workload.Lengths
	for i, m := range r.Minutes[:n-1] {
		full.Add(int(m.Requests))
		if rate := float64(m.Requests) / 60; rate > r.Peak {
			r.Peak, r.PeakAt = rate, float64(i*60)
		}
	}
	r.Baseline = float64(full.Quantile(0.5)) / 60
	return r, true
}

// Files are the paths Write wrote.
type Files struct {
	Prompt, Output string // tokens,count histograms (empirical:FILE)
	RateByMinute   string // "" without timestamps
	Run            string // workload.yaml, for surge run -f
	Burst          string // burst.yaml, for surge burst -f; "" without timestamps
}

// The names of the files Write writes in its folder.
const (
	PromptFile = "prompt_tokens.csv"
	OutputFile = "output_tokens.csv"
	RateFile   = "rate_by_minute.csv"
	RunFile    = "workload.yaml"
	BurstFile  = "burst.yaml"
)

// DefaultRunDuration is the measured phase of the workload.yaml Write
// writes.
const DefaultRunDuration = 5 * time.Minute

// Write writes the fitted workload into dir (created if needed):
//
//	prompt_tokens.csv, output_tokens.csv  tokens,count — for --prompt-tokens
//	                                      empirical:FILE and --output-tokens
//	rate_by_minute.csv                    minute,start_s,requests,rps,partial
//	workload.yaml                         surge run -f: both distributions,
//	                                      rate = the suggested baseline
//	                                      (5 req/s without timestamps), 5m
//	burst.yaml                            surge burst -f: the distributions,
//	                                      baseline_rps, and the peak
//	                                      multiplier among the multipliers
//
// The YAML files name the histograms by their file names: an experiment
// file's relative empirical:FILE is found beside it, so they work from any
// working directory, and the folder can be moved. Each file is written
// once, whole.
func (f *Fit) Write(dir string) (Files, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Files{}, err
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return Files{}, err
	}
	fs := Files{Prompt: filepath.Join(abs, PromptFile), Output: filepath.Join(abs, OutputFile), Run: filepath.Join(abs, RunFile)}
	if err := writeHistogram(fs.Prompt, &f.Prompt); err != nil {
		return Files{}, err
	}
	if err := writeHistogram(fs.Output, &f.Output); err != nil {
		return Files{}, err
	}
	rates, timed := f.Rates()
	if timed {
		fs.RateByMinute = filepath.Join(abs, RateFile)
		var b bytes.Buffer
		b.WriteString("minute,start_s,requests,rps,partial\n")
		for i, m := range rates.Minutes {
			span := 60.0
			if m.Partial && len(rates.Minutes) == 1 {
				span = max(rates.Span, 1)
			}
			fmt.Fprintf(&b, "%d,%g,%d,%.4g,%t\n", i, m.Start, m.Requests, float64(m.Requests)/span, m.Partial)
		}
		if err := os.WriteFile(fs.RateByMinute, b.Bytes(), 0o644); err != nil {
			return Files{}, err
		}
	}
	dists := fmt.Sprintf("prompt_tokens: %s\noutput_tokens: %s\n", yamlString("empirical:"+PromptFile), yamlString("empirical:"+OutputFile))
	var run bytes.Buffer
	fmt.Fprintf(&run, "# surge run -f %s — fitted by surge workload fit from %d rows of %s.\n", fs.Run, f.Rows, filepath.Base(f.File))
	fmt.Fprintf(&run, "# Lengths: the log's own histograms (empirical:FILE; max_tokens = each output draw).\n")
	run.WriteString(dists)
	switch {
	case timed && rates.Baseline <= 0:
		fmt.Fprintf(&run, "# The log's timestamps give no full minute with requests: no baseline could be fitted; set your own rate.\n")
		fmt.Fprintf(&run, "rate: 5\n")
	case timed:
		fmt.Fprintf(&run, "# The suggested baseline: the median per-minute rate of the log's full minutes.\n")
		fmt.Fprintf(&run, "# Peak minute: %.3g req/s = %.2f× the baseline (try: surge burst -f %s).\n", rates.Peak, rates.PeakMultiplier(), filepath.Join(abs, BurstFile))
		fmt.Fprintf(&run, "rate: %s\n", rateString(rates.Baseline))
	default:
		fmt.Fprintf(&run, "# The log has no timestamps: the rate is surge's default; set your own.\n")
		fmt.Fprintf(&run, "rate: 5\n")
	}
	fmt.Fprintf(&run, "duration: %s\n", DefaultRunDuration)
	if err := os.WriteFile(fs.Run, run.Bytes(), 0o644); err != nil {
		return Files{}, err
	}
	if timed && rates.Baseline > 0 {
		fs.Burst = filepath.Join(abs, BurstFile)
		var b bytes.Buffer
		fmt.Fprintf(&b, "# surge burst -f %s — fitted by surge workload fit from %d rows of %s.\n", fs.Burst, f.Rows, filepath.Base(f.File))
		fmt.Fprintf(&b, "# baseline_rps: the median per-minute rate; the multipliers include the log's own peak (%.2f×).\n", rates.PeakMultiplier())
		b.WriteString(dists)
		fmt.Fprintf(&b, "baseline_rps: %s\n", rateString(rates.Baseline))
		fmt.Fprintf(&b, "multipliers: [%s]\n", strings.Join(multipliers(rates.PeakMultiplier()), ", "))
		if err := os.WriteFile(fs.Burst, b.Bytes(), 0o644); err != nil {
			return Files{}, err
		}
	}
	return fs, nil
}

// multipliers are 2, 5 and 10 with the peak's multiplier (rounded to a
// tenth, when above 1 and not one of them) in order.
func multipliers(peak float64) []string {
	ks := []float64{2, 5, 10}
	if p := math.Round(peak*10) / 10; p > 1 && !slices.Contains(ks, p) {
		ks = append(ks, p)
		slices.Sort(ks)
	}
	var out []string
	for _, k := range ks {
		out = append(out, strconv.FormatFloat(k, 'g', -1, 64))
	}
	return out
}

// rateString is a rate rounded to 4 significant digits, at least 0.001.
func rateString(r float64) string {
	return strconv.FormatFloat(max(r, 0.001), 'g', 4, 64)
}

// yamlString is s as a YAML scalar.
func yamlString(s string) string {
	b, _ := yaml.Marshal(s)
	return strings.TrimSpace(string(b))
}

// writeHistogram writes a tokens,count CSV (workload.ReadEmpirical's form).
func writeHistogram(path string, l *workload.Lengths) error {
	var b bytes.Buffer
	b.WriteString("tokens,count\n")
	vals, counts := l.Values()
	for i, v := range vals {
		fmt.Fprintf(&b, "%d,%d\n", v, counts[i])
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// WriteText prints what the log holds: rows, prompt and output percentiles,
// the output/prompt ratio, and the rates.
func (f *Fit) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d requests", f.File, f.Rows)
	if f.ZeroPrompt > 0 || f.ZeroOutput > 0 {
		fmt.Fprintf(&b, " (%d with 0 prompt tokens and %d with 0 output tokens left out of their distributions)", f.ZeroPrompt, f.ZeroOutput)
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "  %-14s %8s %8s %8s %8s %8s %10s\n", "tokens", "p50", "p90", "p95", "p99", "max", "mean")
	for _, row := range []struct {
		name string
		l    *workload.Lengths
	}{{"prompt", &f.Prompt}, {"output", &f.Output}} {
		l := row.l
		fmt.Fprintf(&b, "  %-14s %8d %8d %8d %8d %8d %10.1f\n", row.name, l.Quantile(0.5), l.Quantile(0.9), l.Quantile(0.95), l.Quantile(0.99), l.Max(), l.Mean())
	}
	ratioMed, ratioAll := 0.0, 0.0
	if p := f.Prompt.Quantile(0.5); p > 0 {
		ratioMed = float64(f.Output.Quantile(0.5)) / float64(p)
	}
	if p := f.Prompt.Sum(); p > 0 {
		ratioAll = float64(f.Output.Sum()) / float64(p)
	}
	fmt.Fprintf(&b, "output/prompt: %.3f at the median, %.3f overall (Σ output / Σ prompt tokens)\n", ratioMed, ratioAll)
	if r, ok := f.Rates(); ok {
		fmt.Fprintf(&b, "arrivals: %d minute(s) over %s; suggested baseline %.3g req/s (the median per-minute rate%s), peak %.3g req/s at minute %d = %.2f× the baseline\n",
			len(r.Minutes), time.Duration(r.Span*float64(time.Second)).Round(time.Second), r.Baseline, fullNote(len(r.Minutes)), r.Peak, int(r.PeakAt/60), r.PeakMultiplier())
	} else {
		b.WriteString("arrivals: no timestamp column, no rates\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func fullNote(minutes int) string {
	if minutes > 1 {
		return " of the full minutes; the last, partial one left out"
	}
	return ": one partial minute, requests over its span"
}
