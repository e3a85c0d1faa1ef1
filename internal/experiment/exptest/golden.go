package exptest

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/judge"
	"github.com/surge-bench/surge/internal/record"
)

// TTFT, E2E and Goodput are SLO clauses for constructed verdicts: a p95
// TTFT or p99 completion in ms against a limit in ms (censored: only a
// lower bound is known), a goodput fraction against a limit, over n
// requests — decided as the judge decides a clause with that sample
// (judge.MinForUpperBound: a p99 passes only from 368 values).
func TTFT(measured, limit float64, censored bool, n int64) judge.Clause {
	return latency(judge.ClauseTTFTP95, measured, limit, censored, n, 0.95)
}

// E2E is a p99 completion clause; see TTFT.
func E2E(measured, limit float64, censored bool, n int64) judge.Clause {
	return latency(judge.ClauseE2EP99, measured, limit, censored, n, 0.99)
}

func latency(name string, measured, limit float64, censored bool, n int64, q float64) judge.Clause {
	c := judge.Clause{Name: name, Limit: limit, Measured: measured, Lo: measured, Hi: measured, Samples: n, Bound: censored, HiOpen: censored}
	switch {
	case censored && measured > limit, !censored && n > 0 && measured > limit:
		c.Outcome, c.Reason = judge.Fail, "above the limit"
	case n == 0:
		c.Outcome, c.Reason = judge.Inconclusive, "no requests"
	case censored:
		c.Outcome, c.Reason = judge.Inconclusive, "unknown"
	case n < judge.MinForUpperBound(q):
		c.Outcome, c.Reason, c.HiOpen = judge.Inconclusive, fmt.Sprintf("needs %d values", judge.MinForUpperBound(q)), true
	default:
		c.Outcome = judge.Pass
	}
	return c
}

// Goodput is a goodput-ratio clause, judged by judge itself on n
// arrivals of which round(measured × n) were good.
func Goodput(measured, limit float64, n int64) judge.Clause {
	st := analyze.Stats{Offered: n, Good: int64(math.Round(measured * float64(n))), GoodputRatio: measured, Outcomes: map[record.Outcome]int64{}}
	return judge.SLO{GoodputRatio: limit}.Check(&st).Clauses[0]
}

// Verdict is the verdict of the clauses: FAIL over INCONCLUSIVE over PASS.
func Verdict(cs ...judge.Clause) judge.Verdict {
	v := judge.Verdict{Outcome: judge.Pass, Clauses: cs}
	for _, c := range cs {
		v.Outcome = judge.Worse(v.Outcome, c.Outcome)
	}
	return v
}

// Documented fails t for each column key that docs/metrics.md does not
// name as `key`: every column of results.csv and results.json is
// documented there.
func Documented(t testing.TB, keys []string) {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no go.mod above the test's folder")
		}
		dir = up
	}
	doc, err := os.ReadFile(filepath.Join(dir, "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if !strings.Contains(string(doc), "`"+k+"`") {
			t.Errorf("column %s is not in docs/metrics.md", k)
		}
	}
}
