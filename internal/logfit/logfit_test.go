package logfit

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/surge-bench/surge/internal/workload"
)

// The Azure trace's columns and date-times: 250 rows in minutes of 60,
// 120, 60 and a partial 10 (testdata/azure.csv). By hand: the full minutes
// are 60, 120, 60 requests; median 60 → baseline 1 req/s; peak 120 → 2
// req/s at minute 1, 2× the baseline.
func TestReadAzureRates(t *testing.T) {
	f, err := Read("testdata/azure.csv")
	if err != nil {
		t.Fatal(err)
	}
	if f.Rows != 250 || f.Prompt.Count() != 250 || !f.Absolute {
		t.Fatalf("rows %d, prompts %d, absolute %v", f.Rows, f.Prompt.Count(), f.Absolute)
	}
	r, ok := f.Rates()
	if !ok {
		t.Fatal("no rates")
	}
	if len(r.Minutes) != 4 || !r.Minutes[3].Partial || r.Minutes[1].Requests != 120 || r.Minutes[3].Requests != 10 {
		t.Fatalf("minutes %+v", r.Minutes)
	}
	if r.Baseline != 1 || r.Peak != 2 || r.PeakAt != 60 || r.PeakMultiplier() != 2 {
		t.Errorf("baseline %g, peak %g at %g, ×%g; want 1, 2 at 60, ×2", r.Baseline, r.Peak, r.PeakAt, r.PeakMultiplier())
	}
	if v := f.Prompt.Quantile(1); v != 800 {
		t.Errorf("max prompt %d", v)
	}
}

// JSONL usage fields and CSV with text columns: the counts are read, the
// text is never kept — the fit's rendering and files hold no byte of it.
func TestTextNeverKept(t *testing.T) {
	for _, path := range []string{"testdata/openai.jsonl", "testdata/notime.csv"} {
		f, err := Read(path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if f.Rows == 0 || f.Output.Count() != f.Rows {
			t.Fatalf("%s: %d rows, %d outputs", path, f.Rows, f.Output.Count())
		}
		var out strings.Builder
		f.WriteText(&out)
		dir := t.TempDir()
		files, err := f.Write(dir)
		if err != nil {
			t.Fatal(err)
		}
		all := out.String()
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
			all += string(b)
		}
		if strings.Contains(all, "SECRET") {
			t.Errorf("%s: text of the log reached the output", path)
		}
		if _, timed := f.Rates(); timed != strings.HasSuffix(path, ".jsonl") || (files.RateByMinute != "") != timed {
			t.Errorf("%s: timed %v, rate file %q", path, timed, files.RateByMinute)
		}
	}
}

// The histograms Write writes are what empirical:FILE reads, count for
// count; the YAML names them by their names, beside it.
func TestWriteRoundTrip(t *testing.T) {
	f, err := Read("testdata/azure.csv")
	if err != nil {
		t.Fatal(err)
	}
	files, err := f.Write(filepath.Join(t.TempDir(), "fit"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		l    *workload.Lengths
	}{{files.Prompt, &f.Prompt}, {files.Output, &f.Output}} {
		d, err := workload.ReadEmpirical(c.path)
		if err != nil {
			t.Fatal(err)
		}
		vals, counts := c.l.Values()
		if len(d.Values) != len(vals) {
			t.Fatalf("%s: %v, want %v", c.path, d.Values, vals)
		}
		for i := range vals {
			if d.Values[i] != vals[i] || d.Counts[i] != counts[i] {
				t.Errorf("%s row %d: %d,%d want %d,%d", c.path, i, d.Values[i], d.Counts[i], vals[i], counts[i])
			}
		}
	}
	y, _ := os.ReadFile(files.Run)
	for _, want := range []string{"prompt_tokens: empirical:" + PromptFile + "\n", "rate: 1\n", "duration: 5m0s"} {
		if !strings.Contains(string(y), want) {
			t.Errorf("workload.yaml lacks %q:\n%s", want, y)
		}
	}
	b, _ := os.ReadFile(files.Burst)
	if !strings.Contains(string(b), "baseline_rps: 1\n") || !strings.Contains(string(b), "multipliers: [2, 5, 10]") {
		t.Errorf("burst.yaml:\n%s", b)
	}
	rate, _ := os.ReadFile(files.RateByMinute)
	if !strings.HasPrefix(string(rate), "minute,start_s,requests,rps,partial\n0,0,60,1,false\n1,60,120,2,false\n") {
		t.Errorf("rate_by_minute.csv:\n%s", rate)
	}
}

// Bad input names file:line and the field, never a value of the log.
func TestReadErrors(t *testing.T) {
	dir := t.TempDir()
	file := func(name, text string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(text), 0o644)
		return p
	}
	cases := map[string]struct{ path, want string }{
		"empty":            {file("empty.csv", ""), "empty.csv: no rows"},
		"header only":      {file("header.csv", "prompt_tokens,output_tokens\n"), "header.csv: no rows"},
		"no prompt column": {file("noprompt.csv", "text,output_tokens\nSECRET,5\n"), "noprompt.csv:1: header: no prompt-token column"},
		"no output column": {file("nooutput.csv", "input_tokens,text\n5,SECRET\n"), "nooutput.csv:1: header: no output-token column"},
		"negative":         {file("neg.csv", "prompt_tokens,output_tokens\n10,5\n10,-3\n"), "neg.csv:3: output_tokens: must be ≥ 0, got -3"},
		"absurd":           {file("absurd.csv", "prompt_tokens,output_tokens\n99999999,5\n"), "absurd.csv:2: prompt_tokens: must be at most 1048576 tokens"},
		"text in a count":  {file("text.csv", "prompt_tokens,output_tokens\nSECRET,5\n"), "text.csv:2: prompt_tokens: want a whole number of tokens"},
		"fraction":         {file("frac.csv", "prompt_tokens,output_tokens\n10.5,5\n"), "frac.csv:2: prompt_tokens: want a whole number"},
		"empty field":      {file("emptyfield.csv", "prompt_tokens,output_tokens\n10,\n"), "emptyfield.csv:2: output_tokens: missing"},
		"bad time":         {file("time.csv", "timestamp,prompt_tokens,output_tokens\nSECRET,10,5\n"), "time.csv:2: timestamp: want seconds or a date-time"},
		"bad quote":        {file("quote.csv", "prompt_tokens,output_tokens,text\n10,5,\"SECRET\n"), "quote.csv:2: not CSV"},
		"all zero output":  {file("zero.csv", "prompt_tokens,output_tokens\n10,0\n"), "zero.csv: output_tokens: every row has 0 output tokens"},
		"jsonl missing":    {file("m.jsonl", `{"prompt_tokens": 5, "output_tokens": 3}`+"\n"+`{"prompt_tokens": 5, "text": "SECRET"}`+"\n"), "m.jsonl:2: output_tokens: missing"},
		"jsonl syntax":     {file("s.jsonl", `{"prompt_tokens": 5, SECRET}`+"\n"), "s.jsonl:1: not a JSON object"},
		"jsonl string":     {file("str.jsonl", `{"prompt_tokens": "SECRET", "output_tokens": 3}`+"\n"), "str.jsonl:1: prompt_tokens: want a whole number"},
		"jsonl usage type": {file("u.jsonl", `{"usage": "SECRET"}`+"\n"), "u.jsonl:1: usage: want a number, got a JSON string"},
		"jsonl time lost":  {file("t.jsonl", `{"ts": 1, "input_tokens": 5, "output_tokens": 3}`+"\n"+`{"input_tokens": 5, "output_tokens": 3}`+"\n"), "t.jsonl:2: timestamp: missing"},
		"jsonl negative":   {file("n.jsonl", `{"usage": {"prompt_tokens": -1, "completion_tokens": 3}}`+"\n"), "n.jsonl:1: usage.prompt_tokens: must be ≥ 0"},
		"mixed units":      {file("units.csv", "ts,prompt_tokens,output_tokens\n1,5,5\n1748779200000,5,5\n"), "units.csv: timestamp: the rows span"},
		"missing file":     {filepath.Join(dir, "none.csv"), "none.csv: no such file"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Read(c.path)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
			if strings.Contains(err.Error(), "SECRET") {
				t.Fatalf("the log's text is in the error: %v", err)
			}
		})
	}
}

// Aliases: vLLM-bench-like names, offsets in milliseconds, zero counts
// left out of the distributions, quoted JSON numbers.
func TestAliases(t *testing.T) {
	p := filepath.Join(t.TempDir(), "log")
	os.WriteFile(p, []byte(`{"offset_ms": 0, "input_length": "12", "output_length": 3}
{"offset_ms": 30000, "input_length": 24, "output_length": 0}
{"offset_ms": 90000, "input_length": 24, "output_length": 6}
`), 0o644)
	f, err := Read(p) // no extension: sniffed as JSONL
	if err != nil {
		t.Fatal(err)
	}
	r, _ := f.Rates()
	if f.Rows != 3 || f.ZeroOutput != 1 || f.Output.Count() != 2 || f.Absolute || len(r.Minutes) != 2 || r.Minutes[0].Requests != 2 {
		t.Fatalf("rows %d zero %d outputs %d abs %v minutes %+v", f.Rows, f.ZeroOutput, f.Output.Count(), f.Absolute, r.Minutes)
	}
	if r.Baseline != 2.0/60 {
		t.Errorf("baseline %g, want 2/60", r.Baseline)
	}
}

// FuzzParse: any input is a Fit or an error naming the file, never a
// panic; a Fit has rows and both distributions.
func FuzzParse(f *testing.F) {
	for _, p := range []string{"testdata/azure.csv", "testdata/openai.jsonl", "testdata/notime.csv"} {
		b, _ := os.ReadFile(p)
		f.Add(filepath.Ext(p), b)
	}
	f.Add(".csv", []byte("prompt_tokens,output_tokens\n1,1\n"))
	f.Add("", []byte(`{"input_tokens": 3, "usage": {"completion_tokens": 2}, "ts": "2025-06-01T12:00:00Z"}`))
	f.Fuzz(func(t *testing.T, ext string, b []byte) {
		if len(ext) > 8 {
			ext = ext[:8]
		}
		name := "log" + ext
		fit, err := Parse(name, bytes.NewReader(b))
		if err != nil {
			if !strings.HasPrefix(err.Error(), name) {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if fit.Rows == 0 || fit.Prompt.Count() == 0 || fit.Output.Count() == 0 || fit.Prompt.Max() > workload.MaxPromptTokens {
			t.Fatalf("fit %+v", fit)
		}
		if r, ok := fit.Rates(); ok && (len(r.Minutes) == 0 || r.Baseline <= 0 && len(r.Minutes) == 1) {
			t.Fatalf("rates %+v", r)
		}
	})
}

// A Mooncake trace read as a log: its timestamp is in milliseconds (150
// rows 400 ms apart span 60 s, not 16.7 h).
func TestReadMooncakeMilliseconds(t *testing.T) {
	var b strings.Builder
	for i := range 150 {
		fmt.Fprintf(&b, "{\"timestamp\": %d, \"input_length\": %d, \"output_length\": 20, \"hash_ids\": [1, 2]}\n", 400*i, 600+i)
	}
	path := filepath.Join(t.TempDir(), "mooncake.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	r, ok := f.Rates()
	if !ok || len(r.Minutes) != 1 || r.Minutes[0].Requests != 150 {
		t.Fatalf("rates %+v (ok %v): the timestamps were not read as milliseconds", r.Minutes, ok)
	}
}
