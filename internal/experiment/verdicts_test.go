package experiment

import (
	"strings"
	"testing"

	"github.com/surge-bench/surge/internal/analyze"
)

// The terminal's verdicts: one line per scope with PASS or FAIL and every
// clause's measured value against its limit, then what explains them.
func TestPrintVerdicts(t *testing.T) {
	pass := analyze.Verdict{Pass: true, Clauses: []analyze.Clause{
		{Name: analyze.ClauseTTFTP95, Limit: 2000, Measured: 380, Pass: true, Text: "p95 TTFT 380ms <= 2s: pass"},
		{Name: analyze.ClauseGoodputRatio, Limit: 0.99, Measured: 0.995, Pass: true, Text: "goodput 99.5% of offered >= 99%: pass"},
	}}
	fail := analyze.Verdict{Clauses: []analyze.Clause{
		{Name: analyze.ClauseTTFTP95, Limit: 2000, Measured: 380, Pass: true, Text: "p95 TTFT 380ms <= 2s: pass"},
		{Name: analyze.ClauseGoodputRatio, Limit: 0.99, Measured: 0.69, Text: "goodput 69% of offered < 99%: FAIL"},
	}}
	var b strings.Builder
	PrintVerdicts(&b, append(SLOVerdicts("2× overall", pass), SLOVerdicts("10× overall", fail)...), []string{"2×: the baseline phase already missed the SLO"})
	want := `
Verdicts (SLO clauses: measured vs limit):
  2× overall   PASS  p95 TTFT 380ms <= 2s; goodput 99.5% of offered >= 99%
  10× overall  FAIL  p95 TTFT 380ms <= 2s; goodput 69% of offered < 99%
  why: 2×: the baseline phase already missed the SLO
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	PrintVerdicts(&b, nil, nil)
	if b.Len() != 0 {
		t.Errorf("no verdicts printed %q", b.String())
	}
}
