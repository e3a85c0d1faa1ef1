package workload

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/schedule"
)

func loadTestdata(t testing.TB, name, format string) *Dataset {
	t.Helper()
	d, err := LoadDataset(filepath.Join("testdata", "dataset", name), format)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func rowNumbers(d *Dataset) []int {
	var out []int
	for i := range d.Len() {
		out = append(out, d.RowNumber(i))
	}
	return out
}

func roles(ms []Message) string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Role)
	}
	return strings.Join(out, ",")
}

func TestLoadShareGPTArray(t *testing.T) {
	d := loadTestdata(t, "sharegpt.json", FormatShareGPT)
	// Conversation 3 has no turns: skipped and counted, not an error.
	if got := rowNumbers(d); !slices.Equal(got, []int{1, 2, 4, 5}) {
		t.Fatalf("rows %v, want conversations 1, 2, 4, 5", got)
	}
	if d.Skipped != 1 || !slices.Equal(d.SkippedRows, []int{3}) {
		t.Errorf("skipped %d %v, want 1 [3]", d.Skipped, d.SkippedRows)
	}
	b, _ := os.ReadFile(filepath.Join("testdata", "dataset", "sharegpt.json"))
	if sum := sha256.Sum256(b); d.SHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("sha256 %s, want the file's", d.SHA256)
	}
	tests := []struct {
		row         int
		req, conv   string
		firstUser   string
		promptBytes int
	}{
		{0, "user", "user,assistant,user,assistant", "What is the capital of Iceland, and why is it there?", 52},
		{1, "system,user", "system,user,assistant", "Explain backpressure in one sentence.", 26 + 37},
		// A model turn before the first question stays in the conversation,
		// not in the request.
		{2, "user", "assistant,user,assistant", "Write a haiku about queues.", 27},
		{3, "user", "user,assistant", "Translate 'café au lait' into German, please.", len("Translate 'café au lait' into German, please.")},
	}
	for _, tc := range tests {
		ms := d.Messages(tc.row)
		if got := roles(ms); got != tc.req {
			t.Errorf("row %d: request roles %s, want %s", tc.row, got, tc.req)
		}
		if got := roles(d.Conversation(tc.row)); got != tc.conv {
			t.Errorf("row %d: conversation roles %s, want %s", tc.row, got, tc.conv)
		}
		if got := ms[len(ms)-1].Content; got != tc.firstUser {
			t.Errorf("row %d: first human turn %q, want %q", tc.row, got, tc.firstUser)
		}
		if got := d.PromptBytes(tc.row); got != tc.promptBytes {
			t.Errorf("row %d: %d prompt bytes, want %d", tc.row, got, tc.promptBytes)
		}
	}
	if got := d.Conversation(0)[3].Content; got != "About a third of the country." {
		t.Errorf("conversation 1, turn 4: %q", got)
	}
}

func TestLoadShareGPTLines(t *testing.T) {
	d := loadTestdata(t, "sharegpt.jsonl", FormatShareGPT)
	if got := rowNumbers(d); !slices.Equal(got, []int{1, 2, 4}) {
		t.Fatalf("rows %v, want lines 1, 2, 4 (line 3 is blank)", got)
	}
	if got := roles(d.Messages(1)); got != "system,user" {
		t.Errorf("line 2: request roles %s", got)
	}
	if d.Messages(1)[0].Content != "Answer in French." {
		t.Errorf("line 2: system message %q", d.Messages(1)[0].Content)
	}
}

func TestLoadOpenAIJSONL(t *testing.T) {
	d := loadTestdata(t, "openai.jsonl", FormatOpenAIJSONL)
	if d.Len() != 4 {
		t.Fatalf("%d rows, want 4", d.Len())
	}
	g := newDatasetGen(t, d, func(c *Config) { c.NoNonce = true; c.DatasetSample = SampleSequential })
	tests := []struct {
		roles     string
		last      string
		maxTokens int
		extra     string
	}{
		// model, stream and temperature are ignored.
		{"system,user", "Summarise the rules of chess in two lines.", 64, ""},
		{"user", "Look at this part.\nAnd this one.", 32, ""},
		{"user", "What is the weather in Nuuk?", 0,
			`"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}],"tool_choice":"auto"`},
		{"system,user,assistant,user", "Another one.", 0, `"response_format":{"type":"json_object"}`},
	}
	for i, tc := range tests {
		ms := d.Messages(i)
		if got := roles(ms); got != tc.roles {
			t.Errorf("line %d: roles %s, want %s", i+1, got, tc.roles)
		}
		if got := ms[len(ms)-1].Content; got != tc.last {
			t.Errorf("line %d: last message %q, want %q", i+1, got, tc.last)
		}
		if got := d.MaxTokens(i); got != tc.maxTokens {
			t.Errorf("line %d: max_tokens %d, want %d", i+1, got, tc.maxTokens)
		}
		if got := string(g.Generate(arrival(int64(i))).Extra); got != tc.extra {
			t.Errorf("line %d: extra\n got %s\nwant %s", i+1, got, tc.extra)
		}
	}
	// The nonce goes to the first user message, not the system one.
	g = newDatasetGen(t, d, func(c *Config) { c.DatasetSample = SampleSequential })
	r := g.Generate(arrival(3))
	if r.Messages[0].Content != "Reply in JSON." || !strings.HasPrefix(r.Messages[1].Content, "[req 3-") || r.Messages[3].Content != "Another one." {
		t.Errorf("nonce placement: %q", r.Messages)
	}
}

func TestLoadPromptsJSONL(t *testing.T) {
	d := loadTestdata(t, "prompts.jsonl", FormatPromptsJSONL)
	if d.Len() != 3 || d.MaxTokens(0) != 0 || d.MaxTokens(1) != 40 || d.MaxTokens(2) != 300 {
		t.Fatalf("rows %d, max_tokens %d %d %d", d.Len(), d.MaxTokens(0), d.MaxTokens(1), d.MaxTokens(2))
	}
	if got := d.Messages(1); len(got) != 1 || got[0] != (Message{RoleUser, "List five rivers of Europe."}) {
		t.Errorf("line 2: %q", got)
	}
}

func TestDatasetErrors(t *testing.T) {
	const secret = "SECRET-TEXT"
	files := []struct {
		name, format, want string
	}{
		{"sharegpt_bad_from.json", FormatShareGPT, ": conversation 2: conversations[0].from: unknown role (want human, gpt or system; user, assistant, chatgpt, bard, bing, model, tool also read)"},
		{"openai_bad_content.jsonl", FormatOpenAIJSONL, ":2: messages[1].content: empty text"},
		{"prompts_bad_max_tokens.jsonl", FormatPromptsJSONL, ":3: max_tokens: must be a whole number in [1, 1048576], got -5"},
		{"prompts_missing.jsonl", FormatPromptsJSONL, ":2: prompt: required (prompts-jsonl)"},
		// A file that is another format than the one given.
		{"sharegpt.json", FormatPromptsJSONL, ":1: the file is a JSON array, not JSON lines (prompts-jsonl wants one object per line); a ShareGPT file? use --dataset-format sharegpt"},
		{"sharegpt.json", FormatOpenAIJSONL, ":1: the file is a JSON array, not JSON lines (openai-jsonl wants one object per line); a ShareGPT file? use --dataset-format sharegpt"},
		{"sharegpt.jsonl", FormatOpenAIJSONL, ":1: messages: required (openai-jsonl); the row has conversations: a ShareGPT file? use --dataset-format sharegpt"},
		{"openai.jsonl", FormatPromptsJSONL, ":1: prompt: required (prompts-jsonl); the row has messages: a chat request body? use --dataset-format openai-jsonl"},
		{"openai.jsonl", FormatShareGPT, ":1: conversations: required (sharegpt); the row has messages: a chat request body? use --dataset-format openai-jsonl"},
		{"prompts.jsonl", FormatOpenAIJSONL, ":1: messages: required (openai-jsonl); the row has prompt: use --dataset-format prompts-jsonl"},
	}
	for _, tc := range files {
		t.Run(tc.name+"/"+tc.format, func(t *testing.T) {
			path := filepath.Join("testdata", "dataset", tc.name)
			_, err := LoadDataset(path, tc.format)
			if err == nil {
				t.Fatal("no error")
			}
			if want := "workload: " + path + tc.want; err.Error() != want {
				t.Errorf("error\n got %s\nwant %s", err, want)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("the error quotes the file's text: %s", err)
			}
		})
	}
	rows := []struct {
		name, format, in, want string
	}{
		{"unknown format", "csv", `{"prompt":"x"}`, "workload: dataset format: unknown \"csv\" (want sharegpt, openai-jsonl, prompts-jsonl, texts-jsonl, rerank-jsonl)"},
		{"texts: neither member", FormatTextsJSONL, `{"prompt":"SECRET-TEXT"}`, "workload: f:1: text: missing: a texts-jsonl row is {\"text\": …} or {\"texts\": […]}"},
		{"texts: not strings", FormatTextsJSONL, `{"texts":[1,2]}`, "workload: f:1: texts: want an array of strings"},
		{"texts: empty", FormatTextsJSONL, `{"texts":[]}`, "workload: f:1: texts: want 1..4096 strings, got 0"},
		{"rerank: no query", FormatRerankJSONL, `{"documents":["SECRET-TEXT"]}`, "workload: f:1: query: missing: a rerank-jsonl row is {\"query\": …, \"documents\": […]}"},
		{"rerank: documents a string", FormatRerankJSONL, `{"query":"q","documents":"SECRET-TEXT"}`, "workload: f:1: documents: want an array of strings, got a string"},
		{"empty file", FormatPromptsJSONL, "\n\n", "workload: f: the file is empty"},
		{"not json", FormatPromptsJSONL, "SECRET-TEXT\n", "workload: f:1: not JSON: want one JSON object per line"},
		{"bad json line", FormatPromptsJSONL, `{"prompt":"a"}` + "\n" + `{"prompt": SECRET-TEXT}`, "workload: f:2: not valid JSON (at byte 12)"},
		{"line not an object", FormatPromptsJSONL, `{"prompt":"a"}` + "\n" + `["SECRET-TEXT"]`, "workload: f:2: want a JSON object"},
		{"prompt not a string", FormatPromptsJSONL, `{"prompt":["SECRET-TEXT"]}`, "workload: f:1: prompt: want a string, got an array"},
		{"empty prompt", FormatPromptsJSONL, `{"prompt":"  "}`, "workload: f:1: prompt: empty text"},
		{"max_tokens zero", FormatPromptsJSONL, `{"prompt":"SECRET-TEXT","max_tokens":0}`, "workload: f:1: max_tokens: must be a whole number in [1, 1048576], got 0"},
		{"max_tokens absurd", FormatPromptsJSONL, `{"prompt":"SECRET-TEXT","max_tokens":1e9}`, "workload: f:1: max_tokens: must be a whole number in [1, 1048576], got 1000000000"},
		{"max_tokens fraction", FormatPromptsJSONL, `{"prompt":"SECRET-TEXT","max_tokens":2.5}`, "workload: f:1: max_tokens: must be a whole number in [1, 1048576], got 2.5"},
		{"max_tokens text", FormatPromptsJSONL, `{"prompt":"SECRET-TEXT","max_tokens":"SECRET-TEXT"}`, "workload: f:1: max_tokens: want a whole number of tokens, got a string"},
		{"messages not an array", FormatOpenAIJSONL, `{"messages":"SECRET-TEXT"}`, "workload: f:1: messages: want an array of messages, got a string"},
		{"messages empty", FormatOpenAIJSONL, `{"messages":[]}`, "workload: f:1: messages: empty: want at least one message"},
		{"role missing", FormatOpenAIJSONL, `{"messages":[{"content":"SECRET-TEXT"}]}`, "workload: f:1: messages[0].role: required"},
		{"role unknown", FormatOpenAIJSONL, `{"messages":[{"role":"SECRET-TEXT","content":"SECRET-TEXT"}]}`, "workload: f:1: messages[0].role: want system, user, assistant or tool"},
		{"content missing", FormatOpenAIJSONL, `{"messages":[{"role":"user"}]}`, "workload: f:1: messages[0].content: required"},
		{"content number", FormatOpenAIJSONL, `{"messages":[{"role":"user","content":5}]}`, "workload: f:1: messages[0].content: want a string or an array of text parts, got a number"},
		{"image part", FormatOpenAIJSONL, `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"SECRET-TEXT"}}]}]}`, "workload: f:1: messages[0].content[0].type: only text parts are supported"},
		{"tool_calls", FormatOpenAIJSONL, `{"messages":[{"role":"user","content":"SECRET-TEXT"},{"role":"assistant","content":null,"tool_calls":[{"id":"1"}]}]}`, "workload: f:1: messages[1].tool_calls: not supported: surge sends each message's role and content only"},
		{"tools not an array", FormatOpenAIJSONL, `{"messages":[{"role":"user","content":"SECRET-TEXT"}],"tools":{"name":"SECRET-TEXT"}}`, "workload: f:1: tools: want an array of tool definitions, got an object"},
		{"tools empty", FormatOpenAIJSONL, `{"messages":[{"role":"user","content":"SECRET-TEXT"}],"tools":[]}`, "workload: f:1: tools: empty: want at least one tool, or no tools member"},
		{"response_format string", FormatOpenAIJSONL, `{"messages":[{"role":"user","content":"SECRET-TEXT"}],"response_format":"SECRET-TEXT"}`, "workload: f:1: response_format: want an object, got a string"},
		{"max tokens disagree", FormatOpenAIJSONL, `{"messages":[{"role":"user","content":"SECRET-TEXT"}],"max_tokens":5,"max_completion_tokens":6}`, "workload: f:1: max_completion_tokens: differs from max_tokens (6 vs 5): give one"},
		{"conversations not an array", FormatShareGPT, `{"conversations":{"from":"human"}}`, "workload: f:1: conversations: want an array of turns, got an object"},
		{"turn without value", FormatShareGPT, `{"conversations":[{"from":"human"}]}`, "workload: f:1: conversations[0].value: required"},
		{"turn without from", FormatShareGPT, `{"conversations":[{"value":"SECRET-TEXT"}]}`, "workload: f:1: conversations[0].from: required"},
		{"value not a string", FormatShareGPT, `{"conversations":[{"from":"human","value":["SECRET-TEXT"]}]}`, "workload: f:1: conversations[0].value: want a string, got an array"},
		{"array element broken", FormatShareGPT, `[{"conversations":[{"from":"human","value":"a"}]}, {"conversations": SECRET-TEXT}]`, "workload: f: conversation 2: not valid JSON (near byte 50 of the file)"},
		{"array element not an object", FormatShareGPT, `[{"conversations":[{"from":"human","value":"a"}]}, "SECRET-TEXT"]`, "workload: f: conversation 2: want a JSON object, or a JSON array of conversations"},
		{"array trailing content", FormatShareGPT, `[{"conversations":[{"from":"human","value":"a"}]}] {"x":1}`, "workload: f: more content after the JSON array"},
		{"array unterminated", FormatShareGPT, `[{"conversations":[{"from":"human","value":"a"}]}`, "workload: f: not valid JSON: the array does not end"},
		{"no human turn at all", FormatShareGPT, `[{"conversations":[{"from":"gpt","value":"SECRET-TEXT"}]}, {"conversations":[]}]`, "workload: f: no request: all 2 conversations have no human turn with text"},
		{"prompt too long", FormatPromptsJSONL, `{"prompt":"` + strings.Repeat("x", BytesPerToken*MaxPromptTokens+1) + `"}`, "workload: f:1: prompt too long: 4194305 bytes, above surge's limit of 1048576 tokens (≈ 4 MiB)"},
	}
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadDataset(strings.NewReader(tc.in), "f", tc.format)
			if err == nil {
				t.Fatal("no error")
			}
			if err.Error() != tc.want {
				t.Errorf("error\n got %s\nwant %s", err, tc.want)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("the error quotes the file's text: %s", err)
			}
		})
	}
}

// TestDatasetBOMAndCRLF: files from Windows tools load.
func TestDatasetBOMAndCRLF(t *testing.T) {
	in := "\xef\xbb\xbf{\"prompt\":\"a\"}\r\n{\"prompt\":\"b\"}\r\n"
	d, err := ReadDataset(strings.NewReader(in), "f", FormatPromptsJSONL)
	if err != nil {
		t.Fatal(err)
	}
	if d.Len() != 2 || d.Messages(1)[0].Content != "b" {
		t.Errorf("%d rows", d.Len())
	}
}

// TestDatasetIndexProperties is the property test of sampling: the row of
// arrival k is a function of (order, seed, k) — the same in any call order
// —, another seed gives another sequence, and without replacement every
// row comes exactly once per pass.
func TestDatasetIndexProperties(t *testing.T) {
	for _, n := range []int{1, 2, 3, 7, 64, 100, 1000, 4097} {
		d := &Dataset{rows: make([]datasetRow, n)}
		for _, sample := range DatasetSamples {
			const passes = 3
			k := int64(passes * n)
			forward := make([]int, k)
			for i := range k {
				forward[i] = d.Index(sample, 42, i)
			}
			for i := k - 1; i >= 0; i -= 3 { // another order, another stride
				if got := d.Index(sample, 42, i); got != forward[i] {
					t.Fatalf("n=%d %s: arrival %d is row %d, then %d", n, sample, i, forward[i], got)
				}
			}
			for _, r := range forward {
				if r < 0 || r >= n {
					t.Fatalf("n=%d %s: row %d out of range", n, sample, r)
				}
			}
			if sample != SampleRandom {
				for p := range passes {
					seen := make([]int, n)
					for _, r := range forward[p*n : (p+1)*n] {
						seen[r]++
					}
					for r, c := range seen {
						if c != 1 {
							t.Fatalf("n=%d %s pass %d: row %d taken %d times", n, sample, p, r, c)
						}
					}
				}
			}
			if n >= 64 && sample != SampleSequential {
				other := 0
				for i := range k {
					if d.Index(sample, 43, i) != forward[i] {
						other++
					}
				}
				if other < int(k)/2 {
					t.Errorf("n=%d %s: seed 43 repeats %d of %d rows of seed 42", n, sample, int(k)-other, k)
				}
				if sample == SampleShuffle && slices.Equal(forward[:n], forward[n:2*n]) {
					t.Errorf("n=%d: pass 2 repeats pass 1's order", n)
				}
			}
		}
	}
}

// TestDatasetIndexRandomIsUniform: with replacement, each of 10 rows gets
// about a tenth of 100k draws.
func TestDatasetIndexRandomIsUniform(t *testing.T) {
	d := &Dataset{rows: make([]datasetRow, 10)}
	counts := make([]int, 10)
	for k := range int64(100000) {
		counts[d.Index(SampleRandom, 7, k)]++
	}
	for r, c := range counts {
		if c < 9500 || c > 10500 {
			t.Errorf("row %d drawn %d times of 100000", r, c)
		}
	}
}

func newDatasetGen(t testing.TB, d *Dataset, mut func(*Config)) *Generator {
	t.Helper()
	return newGen(t, ProfileChat, func(c *Config) {
		c.Dataset = d
		if mut != nil {
			mut(c)
		}
	})
}

func TestGenerateFromDataset(t *testing.T) {
	d := loadTestdata(t, "sharegpt.json", FormatShareGPT)
	g := newDatasetGen(t, d, nil)
	seen := map[int]int{}
	for seq := range int64(8) {
		r := g.Generate(arrival(seq))
		seen[r.DatasetRow]++
		if r.Profile != ProfileDataset || r.Seq != seq {
			t.Fatalf("request %d: profile %q seq %d", seq, r.Profile, r.Seq)
		}
		i := slices.Index(rowNumbers(d), r.DatasetRow)
		want := d.Messages(i)
		got := r.Messages
		if len(want) == 1 {
			got = []Message{{RoleUser, r.Prompt}}
			if r.Messages != nil {
				t.Fatalf("request %d: one user message is sent as Prompt", seq)
			}
		}
		nonce := fmt.Sprintf("[req %d-", seq)
		last := got[len(got)-1].Content
		if !strings.HasPrefix(last, nonce) || !strings.HasSuffix(last, want[len(want)-1].Content) {
			t.Fatalf("request %d: first user message %q lacks the nonce or the row's text", seq, last)
		}
		if len(got) == 2 && got[0] != want[0] {
			t.Fatalf("request %d: system message changed", seq)
		}
		bytes := 0
		for _, m := range got {
			bytes += len(m.Content)
		}
		if r.PromptTokens != (bytes+3)/4 || r.PromptTokens != g.IntendedPromptTokens(arrival(seq)) {
			t.Fatalf("request %d: prompt tokens %d for %d bytes (intended %d)", seq, r.PromptTokens, bytes, g.IntendedPromptTokens(arrival(seq)))
		}
		if r.MaxTokens < 1 || r.MaxTokens > g.cfg.Profile.MaxTokens {
			t.Fatalf("request %d: max_tokens %d", seq, r.MaxTokens)
		}
	}
	// Two passes of shuffle: each of the 4 rows twice.
	if len(seen) != 4 || seen[1] != 2 || seen[2] != 2 || seen[4] != 2 || seen[5] != 2 {
		t.Errorf("rows taken %v, want each of 1, 2, 4, 5 twice", seen)
	}
	// The dataset is never modified by the nonce.
	if d.Messages(0)[0].Content != "What is the capital of Iceland, and why is it there?" {
		t.Errorf("the dataset's text changed: %q", d.Messages(0)[0].Content)
	}

	// --no-nonce: the rows verbatim.
	g = newDatasetGen(t, d, func(c *Config) { c.NoNonce = true; c.DatasetSample = SampleSequential })
	if r := g.Generate(arrival(1)); !reflect.DeepEqual(r.Messages, d.Messages(1)) || r.DatasetRow != 2 || r.PromptTokens != (26+37+3)/4 {
		t.Errorf("no nonce: %+v", r)
	}
	// A calibrated Sizing sizes the real text.
	g = newDatasetGen(t, d, func(c *Config) {
		c.NoNonce, c.DatasetSample, c.Sizing = true, SampleSequential, Sizing{TokensPerByte: 0.5, Overhead: 10}
	})
	if r := g.Generate(arrival(0)); r.PromptTokens != 10+26 {
		t.Errorf("calibrated: %d prompt tokens for 52 bytes, want 36", r.PromptTokens)
	}
}

func TestGenerateDatasetMaxTokens(t *testing.T) {
	d := loadTestdata(t, "prompts.jsonl", FormatPromptsJSONL) // max_tokens: none, 40, 300
	seq := func(c *Config) { c.DatasetSample = SampleSequential }
	tests := []struct {
		name string
		mut  func(*Config)
		want [3]int
	}{
		{"row or fixed output", func(c *Config) { c.Profile.Output = Fixed(100) }, [3]int{100, 40, 300}},
		{"profile cap applies to draws only", func(c *Config) { c.Profile.Output, c.Profile.MaxTokens = Fixed(100), 50 }, [3]int{50, 40, 300}},
		{"max_tokens_cap applies to all", func(c *Config) { c.Profile.Output, c.MaxTokensCap = Fixed(100), 64 }, [3]int{64, 40, 64}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := newDatasetGen(t, d, func(c *Config) { seq(c); tc.mut(c) })
			for i, want := range tc.want {
				if got := g.Generate(arrival(int64(i))).MaxTokens; got != want {
					t.Errorf("row %d: max_tokens %d, want %d", i+1, got, want)
				}
			}
		})
	}
	// Synthetic prompts are capped too.
	g := newGen(t, ProfileLongGen, func(c *Config) { c.MaxTokensCap = 200 })
	for s := range int64(100) {
		if mt := g.Generate(arrival(s)).MaxTokens; mt > 200 {
			t.Fatalf("synthetic request %d: max_tokens %d above the cap", s, mt)
		}
	}
}

func TestGenerateDatasetDeterministic(t *testing.T) {
	d := loadTestdata(t, "openai.jsonl", FormatOpenAIJSONL)
	for _, sample := range DatasetSamples {
		a := newDatasetGen(t, d, func(c *Config) { c.DatasetSample = sample })
		b := newDatasetGen(t, d, func(c *Config) { c.DatasetSample = sample })
		var fwd []Request
		for s := range int64(40) {
			fwd = append(fwd, a.Generate(arrival(s)))
		}
		for s := int64(39); s >= 0; s-- {
			if got := b.Generate(arrival(s)); !reflect.DeepEqual(got, fwd[s]) {
				t.Fatalf("%s: request %d differs between call orders", sample, s)
			}
		}
	}
}

func TestConfigValidateDataset(t *testing.T) {
	p, _ := Lookup(ProfileChat)
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Profile: p, DatasetSample: "often"}, `workload: dataset sample: unknown "often" (want shuffle, random, sequential)`},
		{Config{Profile: p, MaxTokensCap: -1}, "workload: max_tokens_cap: must be in [0, 1048576], got -1"},
		{Config{Profile: p, Dataset: &Dataset{Path: "x"}}, "workload: dataset x: no rows"},
	} {
		if err := tc.cfg.Validate(); err == nil || err.Error() != tc.want {
			t.Errorf("got %v, want %s", err, tc.want)
		}
	}
}

func TestGenerateDatasetAllocations(t *testing.T) {
	d := loadTestdata(t, "sharegpt.json", FormatShareGPT)
	g := newDatasetGen(t, d, func(c *Config) { c.DatasetSample = SampleSequential })
	// Row 2 has a system message: the messages slice and the nonced text.
	if n := testing.AllocsPerRun(100, func() { _ = g.Generate(arrival(1)) }); n > 2 {
		t.Errorf("%v allocations per request, want ≤ 2", n)
	}
}

// writeBenchDataset writes an openai-jsonl file of rows rows, each a system
// message and a user message of about 1 KiB in total, and returns its path.
func writeBenchDataset(tb testing.TB, rows int) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "bench.jsonl")
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriter(f)
	text := corpusText(1 << 20)
	for i := range rows {
		off := (i * 7919) % (len(text) - 2048)
		n := 600 + i%800
		content, _ := json.Marshal(string(text[off : off+n]))
		fmt.Fprintf(w, `{"messages":[{"role":"system","content":"You are assistant %d."},{"role":"user","content":%s}],"max_tokens":%d}`+"\n",
			i%10, content, 64+i%256)
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	f.Close()
	return path
}

// BenchmarkDatasetLoad100k loads a dataset of 100k rows (~100 MB of JSON
// lines) and reports the live heap it keeps.
func BenchmarkDatasetLoad100k(b *testing.B) {
	path := writeBenchDataset(b, 100_000)
	st, _ := os.Stat(path)
	b.SetBytes(st.Size())
	var d *Dataset
	for b.Loop() {
		var err error
		if d, err = LoadDataset(path, FormatOpenAIJSONL); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapAlloc)/(1<<20), "heap-MiB")
	b.ReportMetric(float64(st.Size())/(1<<20), "file-MiB")
	runtime.KeepAlive(d)
}

// BenchmarkGenerateDataset is the cost of one request from a dataset of
// 100k rows (shuffled, with the nonce): run with -benchtime=1000000x for
// 1 M requests.
func BenchmarkGenerateDataset(b *testing.B) {
	path := writeBenchDataset(b, 100_000)
	start := time.Now()
	d, err := LoadDataset(path, FormatOpenAIJSONL)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(time.Since(start).Seconds(), "load-s")
	g := newDatasetGen(b, d, nil)
	b.ReportAllocs()
	b.ResetTimer()
	var seq int64
	for b.Loop() {
		r := g.Generate(schedule.Arrival{Seq: seq})
		if r.DatasetRow == 0 {
			b.Fatal("no row")
		}
		seq++
	}
}

// TestUnquote: the fast path for plain strings agrees with encoding/json
// on escapes, non-ASCII text and invalid UTF-8.
func TestUnquote(t *testing.T) {
	for _, in := range []string{`""`, `"plain"`, `"café ü 日本"`, `"a\nb\"c\\d\u00e9"`, "\"bad \xff byte\"", `"\ud83d\ude00"`} {
		var want string
		if err := json.Unmarshal([]byte(in), &want); err != nil {
			t.Fatal(err)
		}
		got, err := unquote(json.RawMessage(in))
		if err != nil || got != want {
			t.Errorf("unquote(%s) = %q, %v; want %q", in, got, err, want)
		}
	}
}

// TestDatasetSharedByGenerators: generators on several goroutines (the live
// run's pool) share one Dataset and agree request by request.
func TestDatasetSharedByGenerators(t *testing.T) {
	d := loadTestdata(t, "openai.jsonl", FormatOpenAIJSONL)
	want := make([]Request, 200)
	g := newDatasetGen(t, d, nil)
	for s := range want {
		want[s] = g.Generate(arrival(int64(s)))
	}
	done := make(chan error, 4)
	for w := range 4 {
		g := newDatasetGen(t, d, nil)
		go func() {
			for s := w; s < len(want); s += 4 {
				if got := g.Generate(arrival(int64(s))); !reflect.DeepEqual(got, want[s]) {
					done <- fmt.Errorf("request %d differs on another goroutine", s)
					return
				}
			}
			done <- nil
		}()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}
