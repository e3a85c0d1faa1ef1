package workload

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The dataset formats (Config.Dataset, LoadDataset).
const (
	// FormatShareGPT is ShareGPT: a JSON array of {"id", "conversations":
	// [{"from": "human"|"gpt"|"system", "value": …}, …]} objects, or one
	// such object per line (JSONL). A request is the first human turn, with
	// the system turns before it as system messages.
	FormatShareGPT = "sharegpt"
	// FormatOpenAIJSONL is one chat request body per line: messages, and
	// optionally tools, tool_choice, response_format, max_tokens or
	// max_completion_tokens.
	FormatOpenAIJSONL = "openai-jsonl"
	// FormatPromptsJSONL is one {"prompt": "…"} per line, optionally with
	// max_tokens.
	FormatPromptsJSONL = "prompts-jsonl"
	// FormatTextsJSONL is one embeddings request per line: {"text": "…"}
	// or {"texts": ["…", …]}, the texts it embeds.
	FormatTextsJSONL = "texts-jsonl"
	// FormatRerankJSONL is one rerank request per line: {"query": "…",
	// "documents": ["…", …]}.
	FormatRerankJSONL = "rerank-jsonl"
)

// DatasetFormats lists the dataset formats.
var DatasetFormats = []string{FormatShareGPT, FormatOpenAIJSONL, FormatPromptsJSONL, FormatTextsJSONL, FormatRerankJSONL}

// InputsFormat reports whether format holds the texts of embeddings or
// rerank requests rather than prompts.
func InputsFormat(format string) bool {
	return format == FormatTextsJSONL || format == FormatRerankJSONL
}

// The roles of an inputs row's parts (FormatTextsJSONL, FormatRerankJSONL).
const (
	RoleText     = "text"
	RoleQuery    = "query"
	RoleDocument = "document"
)

// The orders in which a Generator takes a dataset's rows (Config.DatasetSample).
const (
	// SampleShuffle takes every row once per pass, in a seeded order that
	// changes from pass to pass (sampling without replacement; a plan with
	// more arrivals than rows starts another pass). The default.
	SampleShuffle = "shuffle"
	// SampleRandom draws each arrival's row independently and uniformly
	// (sampling with replacement: rows repeat, some are never sent).
	SampleRandom = "random"
	// SampleSequential takes the rows in file order, cycling.
	SampleSequential = "sequential"
)

// DatasetSamples lists the sampling orders.
var DatasetSamples = []string{SampleShuffle, SampleRandom, SampleSequential}

// ProfileDataset labels requests whose prompts came from a dataset.
const ProfileDataset = "dataset"

// maxDatasetLine bounds one JSONL line, bytes.
const maxDatasetLine = 64 << 20

// The roles of chat messages, shared by every row (no per-row strings).
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Dataset is a file of real prompts, read once into memory. The text of
// every row is kept in a few large blocks (no per-row maps or objects
// beyond one Message per chat message), and a request's Messages point
// into them. Nothing of the text ever appears in an error, a record or a
// report: errors name the file, the line (or the conversation's index) and
// the field.
type Dataset struct {
	Path    string // the file as given
	Format  string // sharegpt, openai-jsonl or prompts-jsonl
	SHA256  string // hex sha256 of the file's bytes
	Skipped int    // sharegpt conversations with no human turn of text (not requests; see LoadDataset)
	// SkippedRows are the first few skipped conversations (1-based index
	// or line), for the warning.
	SkippedRows []int

	rows  []datasetRow
	msgs  []Message // every row's request messages, then its conversation, contiguous
	extra []byte    // every row's Request.Extra, contiguous
}

// datasetRow locates one row's parts in the Dataset's shared storage.
type datasetRow struct {
	number        int32 // 1-based JSONL line, or conversation index in a ShareGPT array
	req, reqN     int32 // msgs[req : req+reqN] is the request
	conv, convN   int32 // msgs[conv : conv+convN] is the whole conversation (sharegpt); = the request otherwise
	nonceAt       int32 // index within the request of the message that gets the nonce (the first user message)
	bytes         int32 // content bytes of the request's messages
	maxTokens     int32 // the row's max_tokens; 0 = none
	extra, extraN int32 // extra[extra : extra+extraN] is the row's Request.Extra
}

// Len is the number of rows (requests) of the dataset.
func (d *Dataset) Len() int { return len(d.rows) }

// ExtraRow is the row number (RowNumber) of the first row that carries
// request members besides its messages (Request.Extra: tools, tool_choice,
// response_format); 0 when none does.
func (d *Dataset) ExtraRow() int {
	for _, r := range d.rows {
		if r.extraN > 0 {
			return int(r.number)
		}
	}
	return 0
}

// RowNumber is the 1-based number of row i (0 ≤ i < Len): its JSONL line,
// or its conversation's index in a ShareGPT array.
func (d *Dataset) RowNumber(i int) int { return int(d.rows[i].number) }

// Messages returns the request messages of row i (without surge's nonce).
// The slice is shared: callers must not modify it.
func (d *Dataset) Messages(i int) []Message {
	r := &d.rows[i]
	return d.msgs[r.req : r.req+r.reqN : r.req+r.reqN]
}

// Conversation returns every turn of row i's conversation with its role:
// for ShareGPT the whole conversation (system, user and assistant turns in
// order), for the other formats the request's messages. It is what a
// session replays turn by turn. The slice is shared: callers must not
// modify it.
func (d *Dataset) Conversation(i int) []Message {
	r := &d.rows[i]
	return d.msgs[r.conv : r.conv+r.convN : r.conv+r.convN]
}

// MaxTokens is row i's max_tokens, 0 when the row has none.
func (d *Dataset) MaxTokens(i int) int { return int(d.rows[i].maxTokens) }

// PromptBytes is the length in bytes of the text of row i's request
// messages (without the nonce).
func (d *Dataset) PromptBytes(i int) int { return int(d.rows[i].bytes) }

// Index is the 0-based row taken for arrival k with the given sampling
// order and seed: a function of (sample, seed, k) only, so that the order
// of calls does not matter.
//
//	sequential: k mod n
//	random:     ⌊h(seed, k) · n / 2^64⌋, h a 64-bit mix (SplitMix64)
//	shuffle:    π_c(k mod n), c = ⌊k / n⌋ the pass, π_c a pseudo-random
//	            permutation of 0..n−1 keyed by (seed, c): a 6-round Feistel
//	            network on the smallest even-bit square ≥ n, cycle-walked
//	            into [0, n) (Black and Rogaway), so every row comes exactly
//	            once per pass without storing a permutation
//
// Negative k (surge's own probes) count from the end like k mod n.
func (d *Dataset) Index(sample string, seed int64, k int64) int {
	n := int64(len(d.rows))
	if n <= 1 {
		return 0
	}
	s := splitmix64(uint64(seed) ^ 0x64617461736574) // "dataset"
	pass, pos := k/n, k%n
	if pos < 0 {
		pass, pos = pass-1, pos+n
	}
	switch sample {
	case SampleSequential:
		return int(pos)
	case SampleRandom:
		h := splitmix64(s ^ splitmix64(uint64(k)))
		return int(mulHi(h, uint64(n)))
	default:
		return int(permute(uint64(pos), uint64(n), splitmix64(s^uint64(pass))))
	}
}

// mulHi is ⌊a·b / 2^64⌋.
func mulHi(a, b uint64) uint64 {
	aHi, aLo := a>>32, a&0xffffffff
	bHi, bLo := b>>32, b&0xffffffff
	mid1 := aHi * bLo
	mid2 := aLo * bHi
	carry := ((aLo*bLo)>>32 + mid1&0xffffffff + mid2&0xffffffff) >> 32
	return aHi*bHi + mid1>>32 + mid2>>32 + carry
}

// permute is a keyed permutation of [0, n): a balanced Feistel network on
// 2·half bits (2^(2·half) ≥ n, so at most 4n) applied until the value
// falls below n (cycle walking keeps it a bijection on [0, n)).
func permute(x, n, key uint64) uint64 {
	half := uint(1)
	for uint64(1)<<(2*half) < n {
		half++
	}
	mask := uint64(1)<<half - 1
	for {
		l, r := x>>half, x&mask
		for round := range uint64(6) {
			l, r = r, l^(splitmix64(r^key^(round<<56))&mask)
		}
		x = l<<half | r
		if x < n {
			return x
		}
	}
}

// DatasetError is a problem with one row of a dataset file (or with the
// file as a whole, when Line and Conversation are 0). It never holds text
// from the file.
type DatasetError struct {
	Path         string
	Line         int    // 1-based line of a JSONL file; 0 = none
	Conversation int    // 1-based conversation index in a ShareGPT array; 0 = none
	Field        string // e.g. messages[1].content; "" for the row as a whole
	Problem      string
}

// Error is "workload: FILE:LINE: field: problem", or "workload: FILE:
// conversation N: field: problem" in a ShareGPT array.
func (e *DatasetError) Error() string {
	var b strings.Builder
	b.WriteString("workload: ")
	b.WriteString(e.Path)
	switch {
	case e.Line > 0:
		b.WriteString(":")
		b.WriteString(strconv.Itoa(e.Line))
	case e.Conversation > 0:
		b.WriteString(": conversation ")
		b.WriteString(strconv.Itoa(e.Conversation))
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Problem)
	return b.String()
}

// rowError is a problem found inside one row, before its position is known.
type rowError struct{ field, problem string }

func bad(field, format string, a ...any) *rowError {
	return &rowError{field, fmt.Sprintf(format, a...)}
}

// LoadDataset reads a dataset file of the given format (see the Format
// constants and docs/workloads.md). Every row is checked: a row without
// the fields its format needs, with empty text, an unknown role, a
// max_tokens ≤ 0 or above MaxPromptTokens, or a prompt longer than
// MaxPromptTokens tokens by surge's estimate (4 bytes per token) is an
// error naming the file, the line and the field. A file that is another
// format than the one given gets an error that names the right one.
//
// ShareGPT files, as published, hold conversations with no human turn
// (empty lists, a model turn alone, an empty first question). Those are
// not requests: they are skipped and counted (Skipped), as vLLM's
// benchmark does; a file with no request at all is an error. Malformed
// conversations (a turn without from or value, an unknown role) are
// errors.
//
// openai-jsonl reads messages (roles system, user, assistant, tool;
// content a string or an array of text parts, joined by newlines as vLLM
// does), tools, tool_choice, response_format, max_tokens and
// max_completion_tokens. Every other member (model, stream, temperature, …)
// is ignored: surge sets model and stream itself, and sends only the
// members it reads. A message with tool_calls or tool_call_id is refused,
// as surge sends each message's role and content only.
func LoadDataset(path, format string) (*Dataset, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("workload: dataset: %w", err)
	}
	defer f.Close()
	return ReadDataset(f, path, format)
}

// ReadDataset is LoadDataset from r; path names the file in errors.
func ReadDataset(r io.Reader, path, format string) (*Dataset, error) {
	switch format {
	case FormatShareGPT, FormatOpenAIJSONL, FormatPromptsJSONL, FormatTextsJSONL, FormatRerankJSONL:
	default:
		return nil, fmt.Errorf("workload: dataset format: unknown %q (want %s)", format, strings.Join(DatasetFormats, ", "))
	}
	h := sha256.New()
	br := bufio.NewReaderSize(io.TeeReader(r, h), 1<<16)
	b := &builder{d: &Dataset{Path: path, Format: format}, blockCap: 1 << 20}
	first, err := firstByte(br)
	if err != nil {
		return nil, fmt.Errorf("workload: dataset: %s: %w", path, err)
	}
	switch {
	case first == 0:
		return nil, &DatasetError{Path: path, Problem: "the file is empty"}
	case first == '[' && format != FormatShareGPT:
		return nil, &DatasetError{Path: path, Line: 1, Problem: fmt.Sprintf("the file is a JSON array, not JSON lines (%s wants one object per line); a ShareGPT file? use --dataset-format sharegpt", format)}
	case first == '[':
		err = b.readArray(br)
	case first != '{':
		return nil, &DatasetError{Path: path, Line: 1, Problem: "not JSON: want one JSON object per line" + arrayHint(format)}
	default:
		err = b.readLines(br)
	}
	if err != nil {
		return nil, err
	}
	if _, err := io.Copy(io.Discard, br); err != nil {
		return nil, fmt.Errorf("workload: dataset: %s: %w", path, err)
	}
	d := b.finish()
	if len(d.rows) == 0 {
		why := "no rows"
		if d.Skipped > 0 {
			why = fmt.Sprintf("no request: all %d conversations have no human turn with text", d.Skipped)
		}
		return nil, &DatasetError{Path: path, Problem: why}
	}
	d.SHA256 = hex.EncodeToString(h.Sum(nil))
	return d, nil
}

func arrayHint(format string) string {
	if format == FormatShareGPT {
		return ", or a JSON array of conversations"
	}
	return ""
}

// firstByte skips a UTF-8 byte-order mark and white space and returns the
// next byte without consuming it (0 at the end of the file).
func firstByte(br *bufio.Reader) (byte, error) {
	if p, err := br.Peek(3); err == nil && bytes.Equal(p, []byte{0xef, 0xbb, 0xbf}) {
		br.Discard(3)
	}
	for {
		c, err := br.ReadByte()
		if err == io.EOF {
			return 0, nil
		}
		if err != nil {
			return 0, err
		}
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			return c, br.UnreadByte()
		}
	}
}

// readLines reads a JSONL file, one row per non-blank line.
func (b *builder) readLines(br *bufio.Reader) error {
	sc := bufio.NewScanner(br)
	sc.Buffer(make([]byte, 0, 1<<16), maxDatasetLine)
	line := 0
	for sc.Scan() {
		line++
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		if err := b.row(text, line); err != nil {
			return &DatasetError{Path: b.d.Path, Line: line, Field: err.field, Problem: err.problem}
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return &DatasetError{Path: b.d.Path, Line: line + 1, Problem: fmt.Sprintf("line longer than %d MiB", maxDatasetLine>>20)}
		}
		return fmt.Errorf("workload: dataset: %s: %w", b.d.Path, err)
	}
	return nil
}

// readArray reads a ShareGPT JSON array, one conversation per element.
func (b *builder) readArray(br *bufio.Reader) error {
	dec := json.NewDecoder(br)
	if _, err := dec.Token(); err != nil { // [
		return &DatasetError{Path: b.d.Path, Problem: "not valid JSON"}
	}
	for i := 1; dec.More(); i++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return &DatasetError{Path: b.d.Path, Conversation: i, Problem: fmt.Sprintf("not valid JSON (near byte %d of the file)", dec.InputOffset())}
		}
		if err := b.row(raw, i); err != nil {
			return &DatasetError{Path: b.d.Path, Conversation: i, Field: err.field, Problem: err.problem}
		}
	}
	if _, err := dec.Token(); err != nil { // ]
		return &DatasetError{Path: b.d.Path, Problem: "not valid JSON: the array does not end"}
	}
	if _, err := dec.Token(); err != io.EOF {
		return &DatasetError{Path: b.d.Path, Problem: "more content after the JSON array"}
	}
	return nil
}

// jsonRow is every member any format reads; a row of one format that has
// another format's members gets a hint.
type jsonRow struct {
	Conversations       json.RawMessage `json:"conversations"`
	Messages            json.RawMessage `json:"messages"`
	Prompt              json.RawMessage `json:"prompt"`
	Tools               json.RawMessage `json:"tools"`
	ToolChoice          json.RawMessage `json:"tool_choice"`
	ResponseFormat      json.RawMessage `json:"response_format"`
	MaxTokens           json.RawMessage `json:"max_tokens"`
	MaxCompletionTokens json.RawMessage `json:"max_completion_tokens"`
}

// jsonTurn is one turn of a ShareGPT conversation.
type jsonTurn struct {
	From  json.RawMessage `json:"from"`
	Value json.RawMessage `json:"value"`
}

// jsonMessage is one chat message of a request body.
type jsonMessage struct {
	Role       json.RawMessage `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  json.RawMessage `json:"tool_calls"`
	ToolCallID json.RawMessage `json:"tool_call_id"`
}

// typedRow is jsonRow with the conversation or the messages decoded in the
// same pass: the fast path for a well-formed row.
type typedRow struct {
	Conversations       []jsonTurn      `json:"conversations"`
	Messages            []jsonMessage   `json:"messages"`
	Prompt              json.RawMessage `json:"prompt"`
	Tools               json.RawMessage `json:"tools"`
	ToolChoice          json.RawMessage `json:"tool_choice"`
	ResponseFormat      json.RawMessage `json:"response_format"`
	MaxTokens           json.RawMessage `json:"max_tokens"`
	MaxCompletionTokens json.RawMessage `json:"max_completion_tokens"`
}

// present stands for a member decoded elsewhere, for the absence checks.
var present = json.RawMessage("[]")

// row reads one row (a JSON object) numbered number. A well-formed row is
// decoded in one pass; a row that does not decode so is read member by
// member (rowSlow), which names the member at fault.
func (b *builder) row(text []byte, number int) *rowError {
	if len(text) == 0 || text[0] != '{' {
		return bad("", "want a JSON object%s", arrayHint(b.d.Format))
	}
	if InputsFormat(b.d.Format) {
		return b.inputsRow(text, number)
	}
	var t typedRow
	if json.Unmarshal(text, &t) != nil {
		return b.rowSlow(text, number)
	}
	r := jsonRow{Prompt: t.Prompt, Tools: t.Tools, ToolChoice: t.ToolChoice, ResponseFormat: t.ResponseFormat,
		MaxTokens: t.MaxTokens, MaxCompletionTokens: t.MaxCompletionTokens}
	if t.Conversations != nil {
		r.Conversations = present
	}
	if t.Messages != nil {
		r.Messages = present
	}
	return b.rowOf(&r, t.Conversations, t.Messages, number)
}

// inputsRow reads a row of texts (texts-jsonl) or a query with its
// documents (rerank-jsonl).
func (b *builder) inputsRow(text []byte, number int) *rowError {
	var r struct {
		Text      json.RawMessage `json:"text"`
		Texts     json.RawMessage `json:"texts"`
		Query     json.RawMessage `json:"query"`
		Documents json.RawMessage `json:"documents"`
	}
	if err := json.Unmarshal(text, &r); err != nil {
		return jsonProblem("", err)
	}
	list := func(raw json.RawMessage, field string) ([]string, *rowError) {
		if absent(raw) || raw[0] != '[' {
			return nil, bad(field, "want an array of strings, got %s", jsonKind(raw))
		}
		var v []string
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, bad(field, "want an array of strings")
		}
		if len(v) == 0 || len(v) > MaxInputs {
			return nil, bad(field, "want 1..%d strings, got %d", MaxInputs, len(v))
		}
		return v, nil
	}
	start := b.begin(number)
	var texts []string
	var err *rowError
	switch {
	case b.d.Format == FormatRerankJSONL:
		if absent(r.Query) {
			return bad("query", "missing: a rerank-jsonl row is {\"query\": …, \"documents\": […]}")
		}
		q, qerr := textOf(r.Query, "query")
		if qerr != nil {
			return qerr
		}
		if texts, err = list(r.Documents, "documents"); err != nil {
			return err
		}
		b.add(RoleQuery, q)
		for _, d := range texts {
			b.add(RoleDocument, d)
		}
		return b.end(start, 1+len(texts), 0, 0, nil)
	case !absent(r.Texts):
		if texts, err = list(r.Texts, "texts"); err != nil {
			return err
		}
	case !absent(r.Text):
		t, terr := textOf(r.Text, "text")
		if terr != nil {
			return terr
		}
		texts = []string{t}
	default:
		return bad("text", "missing: a texts-jsonl row is {\"text\": …} or {\"texts\": […]}")
	}
	for _, t := range texts {
		b.add(RoleText, t)
	}
	return b.end(start, len(texts), 0, 0, nil)
}

// rowSlow reads a row member by member, so that an error names its member.
func (b *builder) rowSlow(text []byte, number int) *rowError {
	var r jsonRow
	if err := json.Unmarshal(text, &r); err != nil {
		return jsonProblem("", err)
	}
	var turns []jsonTurn
	var msgs []jsonMessage
	switch {
	case b.d.Format == FormatShareGPT && !absent(r.Conversations):
		if r.Conversations[0] != '[' {
			return bad("conversations", "want an array of turns, got %s", jsonKind(r.Conversations))
		}
		if err := json.Unmarshal(r.Conversations, &turns); err != nil {
			return jsonProblem("conversations", err)
		}
	case b.d.Format == FormatOpenAIJSONL && !absent(r.Messages):
		if r.Messages[0] != '[' {
			return bad("messages", "want an array of messages, got %s", jsonKind(r.Messages))
		}
		if err := json.Unmarshal(r.Messages, &msgs); err != nil {
			return jsonProblem("messages", err)
		}
	}
	return b.rowOf(&r, turns, msgs, number)
}

// rowOf reads a decoded row.
func (b *builder) rowOf(r *jsonRow, turns []jsonTurn, msgs []jsonMessage, number int) *rowError {
	switch b.d.Format {
	case FormatShareGPT:
		if absent(r.Conversations) {
			return missing("conversations", *r, "sharegpt")
		}
		return b.shareGPT(turns, number)
	case FormatOpenAIJSONL:
		if absent(r.Messages) {
			return missing("messages", *r, "openai-jsonl")
		}
		return b.openAI(r, msgs, number)
	default:
		if absent(r.Prompt) {
			return missing("prompt", *r, "prompts-jsonl")
		}
		p, err := textOf(r.Prompt, "prompt")
		if err != nil {
			return err
		}
		maxTok, err := maxTokens(r.MaxTokens, "max_tokens")
		if err != nil {
			return err
		}
		start := b.begin(number)
		b.add(RoleUser, p)
		return b.end(start, 1, 0, maxTok, nil)
	}
}

// missing says that the member a format needs is absent, and which format
// the row looks like when it has another format's member.
func missing(field string, r jsonRow, format string) *rowError {
	hint := ""
	switch {
	case format != FormatShareGPT && !absent(r.Conversations):
		hint = "; the row has conversations: a ShareGPT file? use --dataset-format sharegpt"
	case format != FormatOpenAIJSONL && !absent(r.Messages):
		hint = "; the row has messages: a chat request body? use --dataset-format openai-jsonl"
	case format != FormatPromptsJSONL && !absent(r.Prompt):
		hint = "; the row has prompt: use --dataset-format prompts-jsonl"
	}
	return bad(field, "required (%s)%s", format, hint)
}

func absent(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}

// jsonProblem describes a decoding error without quoting the input.
func jsonProblem(field string, err error) *rowError {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field != "" {
			if field != "" {
				field += "."
			}
			field += te.Field
		}
		return bad(field, "want %s, got a JSON %s", goTypeName(te.Type.String()), te.Value)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return bad(field, "not valid JSON (at byte %d)", se.Offset)
	}
	return bad(field, "not valid JSON")
}

func goTypeName(t string) string {
	switch {
	case t == "string":
		return "a string"
	case strings.HasPrefix(t, "[]"):
		return "an array"
	case strings.HasPrefix(t, "map[") || strings.HasPrefix(t, "struct") || strings.Contains(t, "."):
		return "an object"
	}
	return t
}

// textOf decodes a JSON string.
func textOf(raw json.RawMessage, field string) (string, *rowError) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", bad(field, "want a string, got %s", jsonKind(raw))
	}
	s, err := unquote(raw)
	if err != nil {
		return "", jsonProblem(field, err)
	}
	if strings.TrimSpace(s) == "" {
		return "", bad(field, "empty text")
	}
	return s, nil
}

// unquote decodes a JSON string already checked by the decoder that
// produced it: a string without escapes that is valid UTF-8 is its own
// bytes (the common case, without a second scan); any other goes through
// encoding/json (escapes, invalid UTF-8 replaced by U+FFFD).
func unquote(raw json.RawMessage) (string, error) {
	if len(raw) >= 2 {
		if in := raw[1 : len(raw)-1]; bytes.IndexByte(in, '\\') < 0 && utf8.Valid(in) {
			return string(in), nil
		}
	}
	var s string
	err := json.Unmarshal(raw, &s)
	return s, err
}

// jsonKind names the kind of a JSON value by its first byte.
func jsonKind(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// maxTokens reads an optional max_tokens: a whole number in [1, MaxPromptTokens].
func maxTokens(raw json.RawMessage, field string) (int, *rowError) {
	if absent(raw) {
		return 0, nil
	}
	var v float64
	if err := json.Unmarshal(raw, &v); err != nil {
		return 0, bad(field, "want a whole number of tokens, got %s", jsonKind(raw))
	}
	if v != math.Trunc(v) || v < 1 || v > MaxPromptTokens {
		return 0, bad(field, "must be a whole number in [1, %d], got %s", MaxPromptTokens, plainNumber(v))
	}
	return int(v), nil
}

// shareGPT reads one conversation.
func (b *builder) shareGPT(turns []jsonTurn, number int) *rowError {
	// The whole conversation first (checked turn by turn), then the request.
	conv := len(b.d.msgs)
	human := -1
	for i, t := range turns {
		f := "conversations[" + strconv.Itoa(i) + "]"
		if absent(t.From) {
			return bad(f+".from", "required")
		}
		if t.From[0] != '"' {
			return bad(f+".from", "want a string, got %s", jsonKind(t.From))
		}
		var from string
		if err := json.Unmarshal(t.From, &from); err != nil {
			return jsonProblem(f+".from", err)
		}
		role, ok := shareGPTRoles[strings.ToLower(from)]
		if !ok {
			return bad(f+".from", "unknown role (want human, gpt or system; user, assistant, chatgpt, bard, bing, model, tool also read)")
		}
		if t.Value == nil {
			return bad(f+".value", "required")
		}
		var value string
		if string(t.Value) != "null" {
			if t.Value[0] != '"' {
				return bad(f+".value", "want a string, got %s", jsonKind(t.Value))
			}
			var err error
			if value, err = unquote(t.Value); err != nil {
				return jsonProblem(f+".value", err)
			}
		}
		if human < 0 && role == RoleUser {
			if strings.TrimSpace(value) == "" {
				break // an empty first question: not a request
			}
			human = i
		}
		b.add(role, value)
	}
	if human < 0 {
		b.truncate(conv)
		b.d.Skipped++
		if len(b.d.SkippedRows) < 5 {
			b.d.SkippedRows = append(b.d.SkippedRows, number)
		}
		return nil
	}
	convN := len(b.d.msgs) - conv
	// The request: the system turns before the first human turn, then it.
	start := b.begin(number)
	n := 0
	for i := conv; i < conv+human; i++ {
		if b.d.msgs[i].Role == RoleSystem {
			b.dup(i)
			n++
		}
	}
	b.dup(conv + human)
	if err := b.end(start, n+1, n, 0, nil); err != nil {
		return err
	}
	r := &b.d.rows[len(b.d.rows)-1]
	r.conv, r.convN = int32(conv), int32(convN)
	return nil
}

// shareGPTRoles maps ShareGPT's "from" values (lower-cased) to chat roles.
var shareGPTRoles = map[string]string{
	"human": RoleUser, "user": RoleUser,
	"gpt": RoleAssistant, "assistant": RoleAssistant, "chatgpt": RoleAssistant, "bard": RoleAssistant, "bing": RoleAssistant, "model": RoleAssistant,
	"system": RoleSystem,
	"tool":   RoleTool,
}

var chatRoles = map[string]string{"system": RoleSystem, "user": RoleUser, "assistant": RoleAssistant, "tool": RoleTool}

// openAI reads one chat request body.
func (b *builder) openAI(r *jsonRow, msgs []jsonMessage, number int) *rowError {
	if len(msgs) == 0 {
		return bad("messages", "empty: want at least one message")
	}
	maxTok, err := maxTokens(r.MaxTokens, "max_tokens")
	if err != nil {
		return err
	}
	maxComp, err := maxTokens(r.MaxCompletionTokens, "max_completion_tokens")
	if err != nil {
		return err
	}
	if maxTok > 0 && maxComp > 0 && maxTok != maxComp {
		return bad("max_completion_tokens", "differs from max_tokens (%d vs %d): give one", maxComp, maxTok)
	}
	maxTok = max(maxTok, maxComp)
	extra, rerr := extraMembers(r)
	if rerr != nil {
		return rerr
	}
	start := b.begin(number)
	nonceAt := -1
	for i, m := range msgs {
		f := "messages[" + strconv.Itoa(i) + "]"
		role := ""
		if !absent(m.Role) && m.Role[0] == '"' {
			var s string
			if json.Unmarshal(m.Role, &s) == nil {
				role = chatRoles[s]
			}
		}
		if role == "" {
			if absent(m.Role) {
				return bad(f+".role", "required")
			}
			return bad(f+".role", "want system, user, assistant or tool")
		}
		if !absent(m.ToolCalls) {
			return bad(f+".tool_calls", "not supported: surge sends each message's role and content only")
		}
		if !absent(m.ToolCallID) {
			return bad(f+".tool_call_id", "not supported: surge sends each message's role and content only")
		}
		text, err := content(m.Content, f+".content")
		if err != nil {
			return err
		}
		if nonceAt < 0 && role == RoleUser {
			nonceAt = i
		}
		b.add(role, text)
	}
	return b.end(start, len(msgs), max(nonceAt, 0), maxTok, extra)
}

// content reads a message's content: a string or an array of text parts
// ({"type": "text", "text": …}), joined by newlines.
func content(raw json.RawMessage, field string) (string, *rowError) {
	if absent(raw) {
		return "", bad(field, "required")
	}
	if raw[0] == '"' {
		return textOf(raw, field)
	}
	if raw[0] != '[' {
		return "", bad(field, "want a string or an array of text parts, got %s", jsonKind(raw))
	}
	var parts []struct {
		Type json.RawMessage `json:"type"`
		Text json.RawMessage `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", jsonProblem(field, err)
	}
	var sb strings.Builder
	for j, p := range parts {
		f := field + "[" + strconv.Itoa(j) + "]"
		if string(p.Type) != `"text"` {
			return "", bad(f+".type", "only text parts are supported")
		}
		if absent(p.Text) || p.Text[0] != '"' {
			return "", bad(f+".text", "want a string, got %s", jsonKind(p.Text))
		}
		s, err := unquote(p.Text)
		if err != nil {
			return "", jsonProblem(f+".text", err)
		}
		if j > 0 {
			sb.WriteByte('\n')
		}
		sb.WriteString(s)
	}
	if strings.TrimSpace(sb.String()) == "" {
		return "", bad(field, "empty text")
	}
	return sb.String(), nil
}

// extraMembers validates tools, tool_choice and response_format and encodes
// them compactly as JSON object members without braces.
func extraMembers(r *jsonRow) ([]byte, *rowError) {
	var out []byte
	add := func(name string, raw json.RawMessage, want string, ok func(byte) bool) *rowError {
		if absent(raw) {
			return nil
		}
		if !ok(raw[0]) {
			return bad(name, "want %s, got %s", want, jsonKind(raw))
		}
		var c bytes.Buffer
		if err := json.Compact(&c, raw); err != nil {
			return bad(name, "not valid JSON")
		}
		if len(out) > 0 {
			out = append(out, ',')
		}
		out = append(out, '"')
		out = append(out, name...)
		out = append(out, `":`...)
		out = append(out, c.Bytes()...)
		return nil
	}
	if err := add("tools", r.Tools, "an array of tool definitions", func(c byte) bool { return c == '[' }); err != nil {
		return nil, err
	}
	if string(r.Tools) == "[]" {
		return nil, bad("tools", "empty: want at least one tool, or no tools member")
	}
	if err := add("tool_choice", r.ToolChoice, "a string or an object", func(c byte) bool { return c == '"' || c == '{' }); err != nil {
		return nil, err
	}
	if err := add("response_format", r.ResponseFormat, "an object", func(c byte) bool { return c == '{' }); err != nil {
		return nil, err
	}
	return out, nil
}

// builder accumulates a Dataset's rows. Text is copied into blocks of
// blockCap bytes, each turned into one string when full, so that a
// dataset of 100k rows is a few dozen large strings rather than 100k
// small ones. While building, a message's content is a span of a block
// (resolved by finish).
type builder struct {
	d         *Dataset
	blockCap  int
	block     []byte   // the block being filled (block number len(blocks))
	blocks    []string // the sealed blocks
	spans     []span   // per message of d.msgs
	rowNumber int      // the row being read
}

// span locates a message's content: blocks[block][off:end], or the
// message's own Content when block < 0.
type span struct{ block, off, end int32 }

func (s span) len(m *Message) int {
	if s.block < 0 {
		return len(m.Content)
	}
	return int(s.end - s.off)
}

// add appends one message whose content is copied into the current block.
func (b *builder) add(role, text string) {
	if len(text) >= b.blockCap/4 {
		// A large text keeps its own string (decoded once, not copied).
		b.d.msgs = append(b.d.msgs, Message{Role: role, Content: text})
		b.spans = append(b.spans, span{block: -1})
		return
	}
	if len(b.block)+len(text) > b.blockCap {
		b.blocks = append(b.blocks, string(b.block))
		b.block = b.block[:0]
	}
	if b.block == nil {
		b.block = make([]byte, 0, b.blockCap)
	}
	b.spans = append(b.spans, span{int32(len(b.blocks)), int32(len(b.block)), int32(len(b.block) + len(text))})
	b.block = append(b.block, text...)
	b.d.msgs = append(b.d.msgs, Message{Role: role})
}

// dup appends a copy of message i (same role, same content).
func (b *builder) dup(i int) {
	b.d.msgs = append(b.d.msgs, b.d.msgs[i])
	b.spans = append(b.spans, b.spans[i])
}

// truncate drops the messages from n on.
func (b *builder) truncate(n int) {
	b.d.msgs, b.spans = b.d.msgs[:n], b.spans[:n]
}

// begin starts row number's request messages and returns where they start.
func (b *builder) begin(number int) int {
	b.rowNumber = number
	return len(b.d.msgs)
}

// end ends the row whose request is the n messages from start, with the
// nonce going to the message at index nonceAt of the request.
func (b *builder) end(start, n, nonceAt, maxTok int, extra []byte) *rowError {
	size := 0
	for i := start; i < start+n; i++ {
		size += b.spans[i].len(&b.d.msgs[i])
	}
	if size > BytesPerToken*MaxPromptTokens {
		b.truncate(start)
		return bad("", "prompt too long: %d bytes, above surge's limit of %d tokens (≈ %d MiB)", size, MaxPromptTokens, BytesPerToken*MaxPromptTokens>>20)
	}
	r := datasetRow{number: int32(b.rowNumber), req: int32(start), reqN: int32(n), conv: int32(start), convN: int32(n),
		nonceAt: int32(nonceAt), bytes: int32(size), maxTokens: int32(maxTok), extra: int32(len(b.d.extra)), extraN: int32(len(extra))}
	b.d.extra = append(b.d.extra, extra...)
	b.d.rows = append(b.d.rows, r)
	return nil
}

// finish seals the last block and points every message into its block.
func (b *builder) finish() *Dataset {
	if len(b.block) > 0 {
		b.blocks = append(b.blocks, string(b.block))
	}
	for i, s := range b.spans {
		if s.block >= 0 {
			b.d.msgs[i].Content = b.blocks[s.block][s.off:s.end]
		}
	}
	b.d.msgs = b.d.msgs[:len(b.d.msgs):len(b.d.msgs)]
	b.d.rows = b.d.rows[:len(b.d.rows):len(b.d.rows)]
	b.spans, b.blocks, b.block = nil, nil, nil
	return b.d
}
