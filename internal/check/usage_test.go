package check

import (
	"context"
	"fmt"
	"net/http"
	"testing"
)

func TestUsageSim(t *testing.T) {
	for _, api := range []string{APIChat, APICompletions} {
		t.Run(api, func(t *testing.T) {
			tt := &T{Probe: simProbe(t, fastSim(), api), Config: DefaultConfig()}
			mustStatus(t, checkUsageStream(context.Background(), tt), Pass, "16 completion tokens")
			mustStatus(t, checkUsageCount(context.Background(), tt), Pass, "usage 32 completion tokens, 32 content chunks counted (tolerance ±2)")
			mustStatus(t, checkUsageUnary(context.Background(), tt), Pass, "+ 8 completion = ")
		})
	}
}

// usageEvent is the final usage chunk of a stream.
func usageEvent(prompt, completion int) string {
	return fmt.Sprintf(`{"choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`, prompt, completion, prompt+completion)
}

func TestUsageShapes(t *testing.T) {
	for name, tc := range map[string]struct {
		run    func(context.Context, *T) Result
		h      http.HandlerFunc
		status Status
		want   string
	}{
		"stream without usage": {checkUsageStream, func(w http.ResponseWriter, r *http.Request) { streamEvents(w, true, wordEvents(16, "length")...) },
			Fail, "no usage chunk in 17 SSE events although stream_options.include_usage was asked"},
		"usage first": {checkUsageStream, func(w http.ResponseWriter, r *http.Request) {
			streamEvents(w, true, append([]any{usageEvent(5, 16)}, wordEvents(16, "length")...)...)
		}, Warn, "usage at event 1 of 18, before the last content (event 17)"},
		"usage of nothing": {checkUsageStream, func(w http.ResponseWriter, r *http.Request) {
			streamEvents(w, true, append(wordEvents(16, "length"), usageEvent(5, 0))...)
		}, Fail, "completion_tokens 0 after 16 content chunks"},
		"stream_options refused": {checkUsageStream, func(w http.ResponseWriter, r *http.Request) { apiError(w, 400, "invalid_request_error") },
			Skip, "stream_options refused: HTTP 400 (invalid_request_error)"},
		"count without usage": {checkUsageCount, func(w http.ResponseWriter, r *http.Request) { streamEvents(w, true, wordEvents(32, "length")...) },
			Skip, "no usage to compare (see usage.stream)"},
		"count merged": {checkUsageCount, func(w http.ResponseWriter, r *http.Request) {
			streamEvents(w, true, append(wordEvents(8, "length"), usageEvent(5, 32))...)
		}, Warn, "fewer content chunks than tokens (4.0 tokens per chunk)"},
		"unary without usage": {checkUsageUnary, func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, `{"choices":[{"index":0,"message":{"content":"hi"},"finish_reason":"length"}]}`)
		}, Fail, "no usage in the response body"},
		"unary bad total": {checkUsageUnary, func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, `{"choices":[{"index":0,"message":{"content":"hi"},"finish_reason":"length"}],"usage":{"prompt_tokens":5,"completion_tokens":8,"total_tokens":8}}`)
		}, Warn, "total_tokens 8 ≠ 5 prompt + 8 completion"},
	} {
		t.Run(name, func(t *testing.T) {
			mustStatus(t, tc.run(context.Background(), &T{Probe: stubProbe(t, tc.h), Config: DefaultConfig()}), tc.status, tc.want)
		})
	}
}

func TestJudgeCount(t *testing.T) {
	for _, tc := range []struct {
		u, n   int
		status Status
	}{
		{32, 32, Pass},
		{34, 32, Pass}, // within ±2 (5% of 32, rounded up)
		{35, 32, Warn}, // merged
		{64, 16, Warn},
		{30, 32, Pass},
		{29, 32, Fail}, // undercounts
		{0, 5, Fail},
		{1, 0, Pass}, // one token that was not content (e.g. a stop token)
		{3, 1, Warn},
	} {
		if r := judgeCount(tc.u, tc.n); r.Status != tc.status {
			t.Errorf("usage %d, chunks %d: %s (%s), want %s", tc.u, tc.n, r.Status, r.Evidence, tc.status)
		}
	}
}
