package exptest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/surge-bench/surge/internal/analyze"
)

// TTFT, E2E and Goodput are SLO clauses for constructed verdicts: a p95
// TTFT or p99 completion in ms against a limit in ms (censored: only a
// lower bound is known), a goodput fraction against a limit, over n
// requests.
func TTFT(measured, limit float64, censored bool, n int64) analyze.Clause {
	return latency(analyze.ClauseTTFTP95, measured, limit, censored, n)
}

// E2E is a p99 completion clause; see TTFT.
func E2E(measured, limit float64, censored bool, n int64) analyze.Clause {
	return latency(analyze.ClauseE2EP99, measured, limit, censored, n)
}

func latency(name string, measured, limit float64, censored bool, n int64) analyze.Clause {
	return analyze.Clause{Name: name, Limit: limit, Measured: measured, Samples: n, Censored: censored, Pass: !censored && n > 0 && measured <= limit}
}

// Goodput is a goodput-ratio clause; see TTFT.
func Goodput(measured, limit float64, n int64) analyze.Clause {
	return analyze.Clause{Name: analyze.ClauseGoodputRatio, Limit: limit, Measured: measured, Samples: n, Pass: n > 0 && measured >= limit}
}

// Verdict is the verdict of the clauses: Pass when every one passes.
func Verdict(cs ...analyze.Clause) analyze.Verdict {
	v := analyze.Verdict{Pass: true, Clauses: cs}
	for _, c := range cs {
		v.Pass = v.Pass && c.Pass
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
