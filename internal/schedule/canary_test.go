package schedule

import (
	"strings"
	"testing"
)

// canary stands for content (a prompt someone exported into a trace's
// column): no reader's error may contain it.
const canary = "ZEBRA-CANARY"

func TestTraceErrorsHideCellText(t *testing.T) {
	tests := []struct {
		name, file, text string
		want             string // the error still says where and what kind
	}{
		{"surge offset_s", "t.csv", "offset_s,prompt_tokens\n" + canary + ",3\n", "t.csv:2: offset_s: not a number"},
		{"surge offset_ms", "t.csv", "offset_ms\n0\n" + canary + "\n", "t.csv:3: offset_ms: not a number"},
		{"surge timestamp", "t.csv", "timestamp\n" + canary + "1e9\n", "t.csv:2: timestamp: not a number"},
		{"surge prompt_tokens", "t.csv", "offset_s,prompt_tokens\n0," + canary + "\n", "t.csv:2: prompt_tokens: not an integer"},
		{"surge output_tokens", "t.csv", "offset_s,output_tokens\n0,\"" + canary + ", with a comma\"\n", "t.csv:2: output_tokens: not an integer"},
		{"surge jsonl string", "t.jsonl", `{"offset_s":"` + canary + `"}`, "t.jsonl:1: offset_s: not a number"},
		{"surge jsonl tokens", "t.jsonl", `{"offset_s":0,"prompt_tokens":"` + canary + `"}`, "t.jsonl:1: prompt_tokens: not a number"},
		{"surge jsonl syntax", "t.jsonl", `{"offset_s":` + canary + `}`, "t.jsonl:1: invalid JSON object"},
		{"azure ContextTokens", "az.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900," + canary + ",3\n", "az.csv:2: ContextTokens: not an integer"},
		{"azure GeneratedTokens", "az.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,3," + canary + "\n", "az.csv:2: GeneratedTokens: not an integer"},
		{"azure TIMESTAMP", "az.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n" + canary + ",3,3\n", "az.csv:2: TIMESTAMP: not a date and time"},
		{"azure TIMESTAMP shaped", "az.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46." + canary + ",3,3\n", "az.csv:2: TIMESTAMP: not a date and time"},
		{"mooncake timestamp", "m.jsonl", `{"timestamp":"` + canary + `","input_length":1,"output_length":1}`, "m.jsonl:1: timestamp: not a number"},
		{"mooncake input_length", "m.jsonl", `{"timestamp":0,"input_length":"` + canary + `","output_length":1}`, "m.jsonl:1: input_length: not a number"},
		{"mooncake hash_ids", "m.jsonl", `{"timestamp":0,"input_length":1,"output_length":1,"hash_ids":[1,"` + canary + `"]}`, "m.jsonl:1: hash_ids[1]: not an integer"},
		{"mooncake hash_ids string", "m.jsonl", `{"timestamp":0,"input_length":1,"output_length":1,"hash_ids":"` + canary + `"}`, "m.jsonl:1: hash_ids: want an array"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if strings.HasSuffix(tc.file, ".jsonl") {
				_, err = ReadJSONL(strings.NewReader(tc.text), tc.file)
			} else {
				_, err = ReadCSV(strings.NewReader(tc.text), tc.file)
			}
			if err == nil {
				t.Fatal("no error")
			}
			if strings.Contains(err.Error(), canary) || strings.Contains(err.Error(), "ZEBRA") {
				t.Errorf("error shows the cell's text: %v", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
		})
	}
}
