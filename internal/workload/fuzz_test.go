package workload

import (
	"bytes"
	"testing"
)

// A dataset file is the user's, in any of the formats: reading it never
// panics, and a dataset it accepts has rows.
func FuzzReadDataset(f *testing.F) {
	for _, s := range []string{
		`[{"conversations":[{"from":"human","value":"hi"},{"from":"gpt","value":"hello"}]}]`,
		`{"messages":[{"role":"user","content":"hi"}],"max_tokens":8}` + "\n",
		`{"prompt":"hi","output_tokens":5}` + "\n",
		"{\"prompt\":\"\\ud800\"}\n",
		"[",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, format := range []string{"", FormatShareGPT, FormatOpenAIJSONL, FormatPromptsJSONL} {
			_, _ = ReadDataset(bytes.NewReader(b), "fuzz.jsonl", format)
		}
	})
}
