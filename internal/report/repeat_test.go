package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// A table of repeated runs adds the rep column for people, rep/pooled/
// repeats to results.csv and results.json and the spread section; a table
// without repeats has none of them.
func TestRepeatedRows(t *testing.T) {
	row := func(rep int, pooled bool, p99 float64) Row {
		return Row{Model: "m", TTFT: Percentiles{P50: Val(1), P95: Val(2), P99: Val(p99)}, Samples: 10, Rep: rep, Pooled: pooled, Repeats: 2}
	}
	rep := Table{Title: "t", Rows: []Row{row(1, false, 800), row(2, false, 900), row(0, true, 890)},
		Spreads: []Spread{{Scope: "run", Metric: "ttft_p99_ms", Values: []Opt{Val(800), Val(900)}, Min: Val(800), Median: Val(800), Max: Val(900),
			CILow: Unavailable("fewer than 5 runs"), CIHigh: Unavailable("fewer than 5 runs")}}}
	plain := Table{Title: "t", Rows: []Row{{Model: "m", Samples: 10}}}

	var js bytes.Buffer
	if err := WriteJSON(&js, rep); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Rows    []map[string]json.RawMessage `json:"rows"`
		Spreads []Spread                     `json:"spreads"`
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatalf("%v\n%s", err, js.String())
	}
	if string(doc.Rows[0]["rep"]) != "1" || doc.Rows[0]["pooled"] != nil || string(doc.Rows[2]["rep"]) != "0" || string(doc.Rows[2]["pooled"]) != "true" || string(doc.Rows[2]["repeats"]) != "2" {
		t.Errorf("rows: %s / %s %s %s", doc.Rows[0]["rep"], doc.Rows[2]["rep"], doc.Rows[2]["pooled"], doc.Rows[2]["repeats"])
	}
	if len(doc.Spreads) != 1 {
		t.Errorf("spreads: %+v", doc.Spreads)
	}
	js.Reset()
	WriteJSON(&js, plain)
	if s := js.String(); strings.Contains(s, `"rep"`) || strings.Contains(s, `"pooled"`) || strings.Contains(s, `"spreads"`) {
		t.Errorf("a table without repeats has repeat fields:\n%s", s)
	}

	var csv bytes.Buffer
	WriteCSV(&csv, rep)
	lines := strings.Split(strings.TrimSpace(csv.String()), "\n")
	if !strings.HasSuffix(lines[0], ",rep,pooled,repeats") || !strings.HasSuffix(lines[3], ",0,true,2") || !strings.HasSuffix(lines[1], ",1,false,2") {
		t.Errorf("csv:\n%s", csv.String())
	}
	csv.Reset()
	WriteCSV(&csv, plain)
	if strings.Contains(strings.SplitN(csv.String(), "\n", 2)[0], "rep") {
		t.Errorf("csv without repeats has a rep column: %s", strings.SplitN(csv.String(), "\n", 2)[0])
	}

	var md bytes.Buffer
	WriteMarkdown(&md, rep)
	for _, want := range []string{"| rep ", "| pooled ", "## Spread over repeats", "run TTFT p99 (ms): runs 800, 900; min 800, median 800, max 900; no bootstrap interval (fewer than 5 runs)"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
	md.Reset()
	WriteMarkdown(&md, plain)
	if strings.Contains(md.String(), "rep") || strings.Contains(md.String(), "Spread") {
		t.Errorf("markdown without repeats mentions them:\n%s", md.String())
	}
}
