package workload

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// HistogramWidth is the longest bar of WriteText's histograms, in
// terminal columns.
const HistogramWidth = 40

// WriteText renders the summary for a terminal: the counts, a table of
// p50/p90/p95/p99/max and mean for prompt tokens and max_tokens, their
// output/prompt ratio, the profiles (when more than one), sessions and
// turns, the shared-prefix share and, with histograms, one histogram per
// length in log-spaced bins. Numbers only: no prompt text.
func (s *Summary) WriteText(w io.Writer, histograms bool) error {
	var b strings.Builder
	fmt.Fprintf(&b, "requests: %d", s.Requests)
	if s.DatasetRows > 0 {
		fmt.Fprintf(&b, " (%d from dataset rows)", s.DatasetRows)
	}
	b.WriteString("\n")
	if s.DatasetRows > 0 {
		b.WriteString("dataset prompts are counted by surge's estimate (4 bytes a token) before a run measures the target's tokenizer: expect the server's counts to differ\n")
	}
	if s.Requests == 0 {
		_, err := io.WriteString(w, b.String())
		return err
	}
	fmt.Fprintf(&b, "  %-22s %8s %8s %8s %8s %8s %10s\n", "tokens", "p50", "p90", "p95", "p99", "max", "mean")
	for _, row := range []struct {
		name string
		l    *Lengths
	}{{"prompt (intended)", &s.Prompt}, {"output (max_tokens)", &s.MaxTokens}} {
		fmt.Fprintf(&b, "  %-22s %8d %8d %8d %8d %8d %10.1f\n", row.name, row.l.Quantile(0.5), row.l.Quantile(0.9), row.l.Quantile(0.95), row.l.Quantile(0.99), row.l.Max(), row.l.Mean())
	}
	fmt.Fprintf(&b, "output/prompt: %.3f at the median (p50 max_tokens / p50 prompt), %.3f overall (Σ max_tokens / Σ prompt tokens)\n",
		s.RatioAtMedian(), s.RatioOverall())
	if len(s.Profiles) > 1 {
		var parts []string
		for _, name := range slices.Sorted(maps.Keys(s.Profiles)) {
			parts = append(parts, fmt.Sprintf("%s %.1f%%", name, 100*float64(s.Profiles[name])/float64(s.Requests)))
		}
		fmt.Fprintf(&b, "profiles: %s\n", strings.Join(parts, ", "))
	} else {
		for name := range s.Profiles {
			fmt.Fprintf(&b, "profile: %s\n", name)
		}
	}
	if n := s.Sessions(); n > 0 {
		t := s.TurnsPerSession()
		fmt.Fprintf(&b, "sessions: %d; turns per session p50 %d, p90 %d, max %d (%d turns)\n", n, t.Quantile(0.5), t.Quantile(0.9), t.Max(), t.Sum())
	} else {
		b.WriteString("sessions: none (every request stands alone)\n")
	}
	if s.PrefixTokens > 0 {
		fmt.Fprintf(&b, "shared prefixes: %.1f%% of prompt tokens (%d of %d)\n", 100*s.SharedPrefixShare(), s.PrefixTokens, s.Prompt.Sum())
	} else {
		b.WriteString("shared prefixes: 0% of prompt tokens (every prompt unique)\n")
	}
	if histograms {
		writeHistogram(&b, "prompt tokens (intended)", &s.Prompt)
		writeHistogram(&b, "output tokens (max_tokens)", &s.MaxTokens)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// bar is n/max of HistogramWidth columns in block characters, to an
// eighth of a column; a non-zero count gets at least the thinnest bar.
func bar(n, most int64) string {
	if n <= 0 || most <= 0 {
		return ""
	}
	eighths := max(int(float64(n)*HistogramWidth*8/float64(most)+0.5), 1)
	const parts = " ▏▎▍▌▋▊▉"
	s := strings.Repeat("█", eighths/8)
	if r := eighths % 8; r > 0 {
		s += string([]rune(parts)[r])
	}
	return s
}

func writeHistogram(b *strings.Builder, title string, l *Lengths) {
	bins := l.Histogram()
	var most int64
	for _, bn := range bins {
		most = max(most, bn.Count)
	}
	fmt.Fprintf(b, "\n%s, log-spaced bins:\n", title)
	for _, bn := range bins {
		label := fmt.Sprintf("%d–%d", bn.Lo, bn.Hi)
		if bn.Lo == bn.Hi {
			label = fmt.Sprint(bn.Lo)
		}
		fmt.Fprintf(b, "  %15s │%-*s %6.2f%%\n", label, HistogramWidth, bar(bn.Count, most), 100*float64(bn.Count)/float64(l.Count()))
	}
}
