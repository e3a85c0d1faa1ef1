package report

import (
	"os"
	"strings"
	"testing"
)

// Every column of results.csv and results.json (run, burst, and the
// detail table of capacity and sweep) is in docs/metrics.md.
func TestColumnsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range columns {
		if !strings.Contains(string(doc), "`"+c.Key+"`") {
			t.Errorf("column %s is not in docs/metrics.md", c.Key)
		}
	}
}
