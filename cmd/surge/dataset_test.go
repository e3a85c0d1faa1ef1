package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/surge-bench/surge/internal/record"
)

const testShareGPT = `[
 {"id": "1", "conversations": [{"from": "human", "value": "SECRET-ONE what is a queue?"}, {"from": "gpt", "value": "A line."}]},
 {"id": "2", "conversations": [{"from": "system", "value": "Be brief."}, {"from": "human", "value": "SECRET-TWO name a river"}]},
 {"id": "3", "conversations": [{"from": "human", "value": "SECRET-THREE count to three"}]}
]`

// A run from a dataset: every record names its row, the manifest the file
// (with its sha256), and no output file holds the prompts' text; in
// virtual time and over HTTP to the simulator, from flags and from YAML.
// The server counts the messages sent (at least 12 tokens: text, nonce,
// chat template), in virtual time too.
func TestRunDataset(t *testing.T) {
	dir := t.TempDir()
	ds := filepath.Join(dir, "conv.json")
	os.WriteFile(ds, []byte(testShareGPT), 0o644)
	yml := filepath.Join(dir, "exp.yaml")
	os.WriteFile(yml, []byte("rate: 20\nduration: 1s\nquiet: true\ndataset: "+ds+"\ndataset_format: sharegpt\ndataset_sample: sequential\nmax_tokens_cap: 12\n"), 0o644)
	short := []string{"--baseline-rps", "10", "--multipliers", "2", "--warmup", "0s", "--baseline", "4s", "--burst", "2s", "--recovery", "4s", "--recovery-limit", "4s", "-q"}
	for name, args := range map[string][]string{
		"virtual": append([]string{"burst", "--simulate", "--dataset", ds, "--dataset-format", "sharegpt", "--max-tokens-cap", "12"}, short...),
		"live":    {"run", "--rate", "20", "--duration", "1s", "-q", "--dataset", ds, "--dataset-format", "sharegpt", "--max-tokens-cap", "12"},
		"yaml":    {"run", "-f", yml},
	} {
		t.Run(name, func(t *testing.T) {
			out := filepath.Join(dir, name)
			code, stdout, stderr := surge(t, append(args, "-o", out)...)
			if !ran(code) {
				t.Fatalf("exit %d: %s %s", code, stdout, stderr)
			}
			if name == "virtual" {
				out = filepath.Join(out, "burst-2x")
			}
			rows := map[int]int{}
			if err := record.ReadFile(filepath.Join(out, "requests.jsonl"), func(r *record.Record) error {
				rows[r.DatasetRow]++
				if r.Profile != "dataset" || r.MaxTokens < 1 || r.MaxTokens > 12 || (r.Outcome == record.OK && r.PromptTokens < 12) {
					t.Errorf("record %d: profile %q max_tokens %d prompt_tokens %d", r.Seq, r.Profile, r.MaxTokens, r.PromptTokens)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if keys := slicesSorted(rows); !slices.Equal(keys, []int{1, 2, 3}) {
				t.Errorf("rows sent %v, want 1, 2, 3", rows)
			}
			var m record.Manifest
			b, _ := os.ReadFile(filepath.Join(out, "manifest.json"))
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			if d := m.Dataset; d == nil || d.File != ds || d.Format != "sharegpt" || d.Rows != 3 || len(d.SHA256) != 64 || m.Workload != "dataset" {
				t.Errorf("manifest dataset %+v, workload %q", m.Dataset, m.Workload)
			}
			files, _ := os.ReadDir(out)
			for _, f := range files {
				b, _ := os.ReadFile(filepath.Join(out, f.Name()))
				if strings.Contains(string(b), "SECRET-") {
					t.Errorf("%s holds prompt text", f.Name())
				}
			}
			if strings.Contains(stdout+stderr, "SECRET-") {
				t.Error("the console shows prompt text")
			}
		})
	}
}

func slicesSorted(m map[int]int) []int {
	var out []int
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Bad datasets exit 2 naming the file, the line (or conversation) and the
// field, and never quote the text.
func TestDatasetErrorsExit2(t *testing.T) {
	dir := t.TempDir()
	file := func(name, text string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(text), 0o644)
		return p
	}
	conv := file("conv.json", testShareGPT)
	badRow := file("bad.jsonl", "{\"prompt\": \"SECRET-A\"}\n{\"prompt\": \"SECRET-B\", \"max_tokens\": 0}\n")
	badConv := file("bad.json", `[{"conversations": [{"from": "human", "value": "SECRET-A"}]}, {"conversations": [{"from": "human", "value": 7}]}]`)
	yml := file("exp.yaml", "rate: 1\nduration: 1s\ndataset_format: csv\ndataset: "+conv+"\n")
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"bad row":          {[]string{"--dataset", badRow, "--dataset-format", "prompts-jsonl"}, "surge: workload: " + badRow + ":2: max_tokens: must be a whole number in [1, 1048576], got 0\n"},
		"bad conversation": {[]string{"--dataset", badConv, "--dataset-format", "sharegpt"}, "surge: workload: " + badConv + ": conversation 2: conversations[0].value: want a string, got a number\n"},
		"wrong format":     {[]string{"--dataset", conv, "--dataset-format", "openai-jsonl"}, "use --dataset-format sharegpt"},
		"no format":        {[]string{"--dataset", conv}, "--dataset-format: required with a dataset: sharegpt, openai-jsonl, prompts-jsonl"},
		"unknown format":   {[]string{"--dataset", conv, "--dataset-format", "csv"}, `--dataset-format: unknown "csv"`},
		"format from yaml": {[]string{"-f", yml}, yml + `:3: dataset_format: unknown "csv"`},
		"unknown sampling": {[]string{"--dataset", conv, "--dataset-format", "sharegpt", "--dataset-sample", "often"}, `--dataset-sample: unknown "often" (want shuffle, random, sequential)`},
		"negative cap":     {[]string{"--max-tokens-cap", "-1"}, "--max-tokens-cap: must be in [0, 1048576]"},
		"missing file":     {[]string{"--dataset", filepath.Join(dir, "none.json"), "--dataset-format", "sharegpt"}, "none.json: no such file"},
		"format, no file":  {[]string{"--dataset-format", "sharegpt"}, "--dataset: required with a dataset format"},
		"prompt lengths":   {[]string{"--dataset", conv, "--dataset-format", "sharegpt", "--prompt-tokens", "300"}, "--prompt-tokens: does not apply with a dataset"},
		"shared prefix":    {[]string{"--dataset", conv, "--dataset-format", "sharegpt", "--shared-prefix", "100"}, "--shared-prefix: does not apply with a dataset"},
		"mix":              {[]string{"--dataset", conv, "--dataset-format", "sharegpt", "--mix", "chat=1,rag=1"}, "--mix: does not apply with a dataset"},
	} {
		t.Run(name, func(t *testing.T) {
			out := filepath.Join(dir, "out-"+strings.ReplaceAll(name, " ", "-"))
			code, _, stderr := surge(t, append([]string{"run", "-q", "-o", out}, tc.args...)...)
			if code != exitUsage || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want exit 2 and %q", code, stderr, tc.want)
			}
			if strings.Contains(stderr, "SECRET-") {
				t.Errorf("the error quotes the dataset: %q", stderr)
			}
			if _, err := os.Stat(out); err == nil {
				t.Error("a run folder was created for a configuration error")
			}
		})
	}
}
