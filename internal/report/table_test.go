package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"io"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/surge-bench/surge/internal/golden"
)

func TestTableGolden(t *testing.T) {
	renderers := []struct {
		ext   string
		write func(io.Writer, Table) error
	}{
		{"md", WriteMarkdown},
		{"csv", WriteCSV},
		{"json", WriteJSON},
		// The terminal's tables: no verdicts, diagnoses or legend.
		{"term", func(w io.Writer, t Table) error { return WriteTerminalTables(w, t, "out/results.md") }},
	}
	for name, tab := range fixtureTables() {
		for _, r := range renderers {
			t.Run(name+"."+r.ext, func(t *testing.T) {
				var b bytes.Buffer
				if err := r.write(&b, tab); err != nil {
					t.Fatal(err)
				}
				golden.Check(t, "table/"+name+"."+r.ext, b.Bytes())
			})
		}
	}
}

// TestUnavailableIsNeverZero checks that a row with nothing measured prints
// n/a (CSV) or null with a reason (JSON) in every column that can be
// unavailable, including one the caller forgot to fill.
func TestUnavailableIsNeverZero(t *testing.T) {
	tab := Table{Rows: []Row{naRow()}}
	always := map[string]bool{"samples": true, "partial": true, "partial_reason": true}
	verdicts := map[string]bool{"slo_ttft_p95": true, "slo_e2e_p99": true, "slo_goodput_ratio": true} // a status: N/A

	var c bytes.Buffer
	if err := WriteCSV(&c, tab); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&c).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 {
		t.Fatalf("got %d CSV records, want header + 1", len(recs))
	}
	for i, k := range recs[0] {
		if verdicts[k] {
			if recs[1][i] != "N/A" {
				t.Errorf("CSV %s = %q, want N/A", k, recs[1][i])
			}
			continue
		}
		if !always[k] && recs[1][i] != NA {
			t.Errorf("CSV %s = %q, want %q", k, recs[1][i], NA)
		}
	}

	var j bytes.Buffer
	if err := WriteJSON(&j, tab); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Rows []map[string]json.RawMessage `json:"rows"`
	}
	if err := json.Unmarshal(j.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	for k, raw := range doc.Rows[0] {
		if verdicts[k] {
			if string(raw) != `"N/A"` {
				t.Errorf("JSON %s = %s, want \"N/A\"", k, raw)
			}
			continue
		}
		if always[k] {
			continue
		}
		if string(raw) == "null" { // model, workload, deployment
			continue
		}
		var v struct {
			Value  *float64 `json:"value"`
			Reason string   `json:"reason"`
		}
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatalf("JSON %s = %s: %v", k, raw, err)
		}
		if v.Value != nil || v.Reason == "" {
			t.Errorf("JSON %s = %s, want a null value with a reason", k, raw)
		}
	}

	// In Markdown every cell of the row is n/a, except samples and partial
	// at the end of the failures table.
	var m bytes.Buffer
	if err := WriteMarkdown(&m, tab); err != nil {
		t.Fatal(err)
	}
	rows := 0
	for _, line := range strings.Split(m.String(), "\n") {
		if !strings.HasPrefix(line, "| n/a") {
			continue
		}
		rows++
		line = regexp.MustCompile(`\|\s+0 \| no\s+\|$`).ReplaceAllString(line, "|")
		for _, f := range strings.Split(strings.Trim(line, "| "), "|") {
			if f := strings.TrimSpace(f); f != NA {
				t.Errorf("Markdown cell %q in %q, want n/a", f, line)
			}
		}
	}
	if rows != 3 {
		t.Errorf("found %d Markdown rows, want 3 (load, latency, failures)", rows)
	}
}

// TestCSVHeaderMatchesJSONFields keeps the two machine-readable formats in
// step: same names, same order.
func TestCSVHeaderMatchesJSONFields(t *testing.T) {
	tab := Table{Rows: []Row{fullRow()}}
	var c, j bytes.Buffer
	if err := WriteCSV(&c, tab); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(&j, tab); err != nil {
		t.Fatal(err)
	}
	header, err := csv.NewReader(&c).Read()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Rows []json.RawMessage `json:"rows"`
	}
	if err := json.Unmarshal(j.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(doc.Rows[0]))
	var keys []string
	if _, err := dec.Token(); err != nil { // {
		t.Fatal(err)
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(header, keys) {
		t.Errorf("CSV header %v\nJSON fields %v", header, keys)
	}
}

// TestCensoredAndBounds checks the three spellings of a lower bound.
func TestCensoredAndBounds(t *testing.T) {
	tab := Table{Rows: []Row{censoredRow(), notRecoveredRow()}}
	var m, c, j bytes.Buffer
	for _, err := range []error{WriteMarkdown(&m, tab), WriteCSV(&c, tab), WriteJSON(&j, tab)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []string{"> 60s", "did not recover within 300s", "never", ReasonCensoredP99} {
		if !strings.Contains(m.String(), want) {
			t.Errorf("Markdown lacks %q", want)
		}
	}
	for _, want := range []string{">60000", ">300", "never"} {
		if !strings.Contains(c.String(), want) {
			t.Errorf("CSV lacks %q", want)
		}
	}
	for _, want := range []string{`"lower_bound": 60000`, `"status": "not_recovered"`, `"status": "never"`} {
		if !strings.Contains(j.String(), want) {
			t.Errorf("JSON lacks %q", want)
		}
	}
	if strings.Contains(j.String(), `"value": 60000`) {
		t.Error("JSON gives a censored P99 as a value")
	}
}

// TestUpperBounds checks the three spellings of an upper bound: a queue
// wait inside the engine histogram's first bucket is "≤ 300ms", never an
// interpolated 150 ms and never a lower bound.
func TestUpperBounds(t *testing.T) {
	r := fullRow()
	const why = "inside the engine histogram's first bucket; mean 0.03ms"
	r.QueueWait = Percentiles{P50: AtMost(300, why), P95: AtMost(300, why), P99: AtMost(300, why)}
	tab := Table{Rows: []Row{r}}
	var m, c, j bytes.Buffer
	for _, err := range []error{WriteMarkdown(&m, tab), WriteCSV(&c, tab), WriteJSON(&j, tab)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if !strings.Contains(m.String(), "≤ 300ms") || strings.Contains(m.String(), "> 300ms") {
		t.Errorf("Markdown lacks \"≤ 300ms\" or shows a lower bound:\n%s", m.String())
	}
	if !strings.Contains(m.String(), why) {
		t.Errorf("Markdown lacks the reason %q", why)
	}
	if !strings.Contains(c.String(), ",<=300,") {
		t.Errorf("CSV lacks <=300:\n%s", c.String())
	}
	if !strings.Contains(j.String(), `"upper_bound": 300`) || strings.Contains(j.String(), `"lower_bound": 300`) {
		t.Errorf("JSON lacks an upper_bound of 300:\n%s", j.String())
	}
}

// TestMarkdownAligned checks that every line of each Markdown table has the
// same width, so that the table reads in a terminal.
func TestMarkdownAligned(t *testing.T) {
	for name, tab := range fixtureTables() {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteMarkdown(&b, tab); err != nil {
				t.Fatal(err)
			}
			width := -1
			for _, line := range strings.Split(b.String(), "\n") {
				if !strings.HasPrefix(line, "|") {
					width = -1
					continue
				}
				n := utf8.RuneCountInString(line)
				if width >= 0 && n != width {
					t.Errorf("line %q is %d wide, want %d", line, n, width)
				}
				width = n
			}
		})
	}
}

func TestRowsSorted(t *testing.T) {
	rows := sortedRows([]Row{censoredRow(), partialRow(), naRow(), fullRow(), notRecoveredRow()})
	var got []string
	for _, r := range rows {
		got = append(got, r.Workload+"/"+r.Multiplier.raw())
	}
	want := []string{"/n/a", "chat/2", "chat/5", "chat/10", "rag/5"}
	if !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
}

func TestGoodputPct(t *testing.T) {
	tests := []struct {
		name            string
		goodput, offerd Opt
		want            string
	}{
		{"measured", Val(9), Val(10), "0.9"},
		{"all good", Val(10), Val(10), "1"},
		// Sad paths: never a made-up number.
		{"nothing offered", Val(0), Val(0), NA},
		{"goodput unknown", Opt{}, Val(10), NA},
		{"offered unknown", Val(9), Unavailable("x"), NA},
		{"offered censored", Val(9), Above(10, "x"), NA},
		{"offered NaN", Val(9), Val(math.NaN()), NA},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := Row{GoodputRPS: tc.goodput, OfferedRPS: tc.offerd}
			if got := r.GoodputRatio().raw(); got != tc.want {
				t.Errorf("GoodputRatio = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestOptFormatting(t *testing.T) {
	tests := []struct {
		name      string
		o         Opt
		kind      Kind
		text, raw string
		json      string
	}{
		{"ms", Val(948.25), KindMs, "948", "948.25", `{"value":948.25}`},
		{"small ms", Val(3.25), KindMs, "3.2", "3.25", `{"value":3.25}`},
		{"rate", Val(0.0021), KindRatio, "0.21", "0.0021", `{"value":0.0021}`},
		{"rps", Val(9.6), KindRPS, "9.60", "9.6", `{"value":9.6}`},
		{"multiplier", Val(2.5), KindMult, "2.5×", "2.5", `{"value":2.5}`},
		{"zero is a value", Val(0), KindRatio, "0.00", "0", `{"value":0}`},
		{"censored seconds", Above(60000, "t"), KindMs, "> 60s", ">60000", `{"value":null,"lower_bound":60000,"reason":"t"}`},
		{"censored ms", Above(850, "t"), KindMs, "> 850ms", ">850", `{"value":null,"lower_bound":850,"reason":"t"}`},
		// Sad paths: unavailable in every spelling.
		{"zero value", Opt{}, KindMs, NA, NA, `{"value":null,"reason":"unknown"}`},
		{"reason", Unavailable("no samples"), KindMs, NA, NA, `{"value":null,"reason":"no samples"}`},
		{"NaN", Val(math.NaN()), KindMs, NA, NA, `{"value":null,"reason":"not a finite number"}`},
		{"Inf", Val(math.Inf(1)), KindRPS, NA, NA, `{"value":null,"reason":"not a finite number"}`},
		{"censored NaN", Above(math.NaN(), "t"), KindMs, NA, NA, `{"value":null,"reason":"t"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := optCol("k", "h", groupLoad, tc.kind, "", func(*Row) Opt { return tc.o }).get(&Row{}).format(tc.kind)
			j, err := json.Marshal(tc.o)
			if err != nil {
				t.Fatal(err)
			}
			if c.text != tc.text || c.raw != tc.raw || string(j) != tc.json {
				t.Errorf("got text %q raw %q json %s; want %q %q %s", c.text, c.raw, j, tc.text, tc.raw, tc.json)
			}
		})
	}
}

func TestRecoveryFormatting(t *testing.T) {
	tests := []struct {
		name      string
		r         Recovery
		text, raw string
		json      string
	}{
		{"recovered", RecoveredAfter(212.5), "213s", "212.5", `{"status":"recovered","value":212.5}`},
		{"recovered fast", RecoveredAfter(7.25), "7.2s", "7.25", `{"status":"recovered","value":7.25}`},
		{"not recovered", NotRecoveredWithin(300), "did not recover within 300s", ">300", `{"status":"not_recovered","value":null,"lower_bound":300,"reason":"did not recover within 300s"}`},
		{"never", NeverRecovers("λ ≥ μ"), "never", "never", `{"status":"never","value":null,"reason":"λ ≥ μ"}`},
		// Sad paths.
		{"zero value", Recovery{}, NA, NA, `{"status":"n/a","value":null,"reason":"unknown"}`},
		{"na", RecoveryNA("no burst"), NA, NA, `{"status":"n/a","value":null,"reason":"no burst"}`},
		{"recovered NaN", RecoveredAfter(math.NaN()), NA, NA, `{"status":"n/a","value":null,"reason":"unknown"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j, err := json.Marshal(tc.r)
			if err != nil {
				t.Fatal(err)
			}
			if tc.r.text() != tc.text || tc.r.raw() != tc.raw || string(j) != tc.json {
				t.Errorf("got text %q raw %q json %s; want %q %q %s", tc.r.text(), tc.r.raw(), j, tc.text, tc.raw, tc.json)
			}
		})
	}
}

type failWriter struct{ after int }

func (f *failWriter) Write(p []byte) (int, error) {
	if f.after <= 0 {
		return 0, errors.New("disk full")
	}
	f.after--
	return len(p), nil
}

func TestWriteErrors(t *testing.T) {
	tab := fixtureTables()["sweep"]
	tests := []struct {
		name  string
		write func(io.Writer, Table) error
	}{
		{"markdown", WriteMarkdown},
		{"csv", WriteCSV},
		{"json", WriteJSON},
		{"html", func(w io.Writer, t Table) error { return WriteHTML(w, HTMLReport{Title: "x", Tables: []Table{t}}) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.write(&failWriter{}, tab)
			if err == nil || !strings.Contains(err.Error(), "disk full") || !strings.HasPrefix(err.Error(), "report: ") {
				t.Errorf("error = %v, want a report: … disk full error", err)
			}
		})
	}
}

// A layout that omits the burst columns leaves them out of Markdown and
// HTML, and says nothing about them; CSV and JSON keep every column, n/a
// with its reason.
func TestOmitBurstColumns(t *testing.T) {
	r := naRow()
	tbl := Table{Title: "run", Rows: []Row{r, r}, Omit: BurstColumns}
	var md, csvOut, js, html bytes.Buffer
	if err := WriteMarkdown(&md, tbl); err != nil {
		t.Fatal(err)
	}
	WriteCSV(&csvOut, tbl)
	WriteJSON(&js, tbl)
	WriteHTML(&html, HTMLReport{Title: "run", Tables: []Table{tbl}})
	for _, head := range []string{"| k×", "| base", "| burst ", "| recovery", "| predicted", "recovery, predicted:"} {
		if strings.Contains(md.String(), head) {
			t.Errorf("markdown has %q:\n%s", head, md.String())
		}
	}
	if strings.Contains(html.String(), ">predicted<") {
		t.Error("HTML has the predicted-recovery column")
	}
	header := strings.SplitN(csvOut.String(), "\n", 2)[0]
	for _, key := range BurstColumns {
		if !strings.Contains(header, key) {
			t.Errorf("CSV lacks %s: %s", key, header)
		}
		if !strings.Contains(js.String(), `"`+key+`"`) {
			t.Errorf("JSON lacks %s", key)
		}
	}
	if !strings.Contains(md.String(), "| offered") || !strings.Contains(md.String(), "| TTFT p50") {
		t.Errorf("markdown lost the other columns:\n%s", md.String())
	}
}

// A reason every row shares is said once, for every row.
func TestNoteSharedByEveryRowOnce(t *testing.T) {
	r := naRow()
	r2 := naRow()
	r2.Workload = "rag"
	var md bytes.Buffer
	if err := WriteMarkdown(&md, Table{Rows: []Row{r, r2}}); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(md.String(), "every row: "); n == 0 {
		t.Errorf("no shared note:\n%s", md.String())
	}
	if strings.Contains(md.String(), "chat: queue p50") || strings.Contains(md.String(), "rag: queue p50") {
		t.Errorf("a shared note is repeated per row:\n%s", md.String())
	}
}

// A column common to every row is listed once in the header, even when
// the table's own meta names it too.
func TestCommonColumnListedOnce(t *testing.T) {
	tb := Table{Title: "t", Meta: []KV{{Key: "model", Value: "m1"}, {Key: "surge", Value: "dev"}},
		Rows: []Row{{Workload: "a", Model: "m1"}, {Workload: "b", Model: "m1"}}}
	var md, html bytes.Buffer
	if err := WriteMarkdown(&md, tb); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&html, HTMLReport{Title: "t", Tables: []Table{tb}}); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(md.String(), "- model: m1"); n != 1 {
		t.Errorf("results.md lists the model %d times:\n%s", n, md.String())
	}
	if n := strings.Count(html.String(), ">m1<"); n != 1 {
		t.Errorf("report.html lists the model %d times", n)
	}
}
