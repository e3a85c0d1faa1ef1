package record

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
)

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

func full() Record {
	r := New("run-7", 7, "burst", 1_000_000)
	r.SentNs, r.ConnNs, r.HeadersNs, r.FirstChunkNs, r.FirstTokenNs, r.DoneNs = 1_000_100, 1_000_200, 2_000_000, 2_000_001, 3_000_000, 9_000_000
	r.Status, r.Outcome, r.Good, r.Error = 200, OK, true, ""
	r.PromptTokens, r.OutputTokens, r.MaxTokens, r.UsageFromServer = 512, 150, 200, true
	r.ITLMaxNs, r.TPOTNs, r.Chunks, r.Attempts = 90_000, 40_268, 150, 1
	r.Replica, r.Profile, r.Shard = "r1", "chat", 2
	r.FirstTextNs, r.ReasoningTokens, r.CachedTokens, r.ConnRetries = 3_500_000, 20, 128, 1
	r.RateLimit.RemainingRequests, r.RateLimit.ResetTokensNs = 99, 6_000_000_000
	r.RateLimit.RemainingTokensDay, r.RateLimit.ResetTokensDayNs, r.RateLimit.Unparsed = 1_200_000, 36_000_000_000_000, 2
	r.EngineQueueNs, r.EnginePrefillNs, r.EngineDecodeNs, r.EngineE2ENs = 12, 13, 14, 39
	r.ServerTiming = []Timing{{"queue", 12_500_000}, {"upstream", 8_000_000}}
	r.TraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	r.DatasetRow, r.Session, r.Turn, r.Branch, r.PrefixTokens, r.SessionTurns = 41, 8, 3, 2, 900, 5
	return r
}

// A record without a cause writes no "cause" key, so the lines of every
// run that is not a coordinated one are byte for byte what they were.
func TestCauseOmittedWhenEmpty(t *testing.T) {
	r := New("x-0", 0, "baseline", 0)
	r.Outcome, r.Error = GeneratorDrop, "in-flight cap 8 reached"
	if b := r.AppendJSON(nil); strings.Contains(string(b), "cause") {
		t.Fatalf("line without a cause names one: %s", b)
	}
	r.Cause = CauseWorkerLost
	if b := r.AppendJSON(nil); !strings.Contains(string(b), `"cause":"worker_lost"`) {
		t.Fatalf("line with a cause: %s", b)
	}
	if !CauseWorkerLost.Worker() || !CauseWorkerInterrupted.Worker() || Cause("").Worker() {
		t.Fatal("Worker() wrong")
	}
}

func TestRoundTrip(t *testing.T) {
	cases := map[string]Record{
		"full":    full(),
		"dropped": func() Record { r := New("x-0", 0, "baseline", 0); r.Outcome = GeneratorDrop; return r }(),
		"rate limited": func() Record {
			r := New("x-1", 1, "burst", 5)
			r.SentNs, r.HeadersNs, r.DoneNs, r.Status, r.Outcome, r.RetryAfterNs, r.Error = 0, 7, 8, 429, RateLimited, 1e9, "status 429"
			return r
		}(),
		"quoted strings": func() Record { r := full(); r.Error = "weird \"quote\" \\ \n"; return r }(),
		"worker interrupted": func() Record {
			r := New("x-2", 2, "burst", 5)
			r.SentNs, r.DoneNs, r.Outcome, r.Cause = 6, 9, Cancelled, CauseWorkerInterrupted
			r.Error = "worker quit interrupted at 6.9 s: Ctrl-C or SIGTERM on the worker (cancelled mid-stream)"
			return r
		}(),
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			b := in.AppendJSON(nil)
			in.Schema = SchemaVersion // every line says its version
			if !json.Valid(b) {
				t.Fatalf("invalid JSON: %s", b)
			}
			var out Record
			if err := json.Unmarshal(b, &out); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(out, in) {
				t.Fatalf("round trip:\n in  %+v\n out %+v", in, out)
			}
		})
	}
}

func TestAbsentTimesAreOmittedAndZeroIsKept(t *testing.T) {
	r := New("a", 0, "p", 0)
	r.SentNs = 0 // a send at the very origin is a real time, not "absent"
	b := string(r.AppendJSON(nil))
	if !strings.Contains(b, `"sent_ns":0`) {
		t.Errorf("sent_ns=0 must be kept: %s", b)
	}
	for _, f := range []string{"conn_ns", "headers_ns", "first_token_ns", "done_ns", "itl_max_ns", "tpot_ns", "retry_after_ns",
		"first_text_ns", "ratelimit", "engine_queue_ns", "engine_e2e_ns", "server_timing", "trace_id", "conn_retries", "reasoning_tokens"} {
		if strings.Contains(b, f) {
			t.Errorf("%s should be absent: %s", f, b)
		}
	}
	if r.TTFTSend() != None || r.Lag() != 0 {
		t.Errorf("derived: ttft %d lag %d", r.TTFTSend(), r.Lag())
	}
}

func TestUnknownOutcomeRejected(t *testing.T) {
	var r Record
	err := json.Unmarshal([]byte(`{"id":"a","seq":1,"phase":"p","scheduled_ns":0,"outcome":"fine"}`), &r)
	if err == nil || !strings.Contains(err.Error(), `unknown outcome "fine"`) {
		t.Fatalf("got %v", err)
	}
}

func TestWriterConcurrentAndReader(t *testing.T) {
	for _, gz := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "requests.jsonl")
		if gz {
			path += ".gz"
		}
		w, err := Create(path)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		const n = 1000
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				for i := g; i < n; i += 4 {
					r := full()
					r.Seq = int64(i)
					if err := w.Write(&r); err != nil {
						t.Error(err)
					}
				}
			}(g)
		}
		wg.Wait()
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if err := w.Write(&Record{}); err == nil {
			t.Error("write after close must fail")
		}
		seen := make([]bool, n)
		if err := ReadFile(path, func(r *Record) error { seen[r.Seq] = true; return nil }); err != nil {
			t.Fatal(err)
		}
		for i, ok := range seen {
			if !ok {
				t.Fatalf("gz=%v: record %d missing", gz, i)
			}
		}
	}
}

func TestWriterFlushesAsItGoes(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(nopCloser{&buf}, false)
	r := full()
	for i := 0; i < FlushEvery; i++ {
		if err := w.Write(&r); err != nil {
			t.Fatal(err)
		}
	}
	if got := strings.Count(buf.String(), "\n"); got != FlushEvery {
		t.Fatalf("after %d writes the file holds %d lines", FlushEvery, got)
	}
}

func TestReadErrorsNameLine(t *testing.T) {
	f := full()
	in := string(f.AppendJSON(nil)) + "\n\n" + `{"id":"b","seq":` + "\n"
	err := Read(strings.NewReader(in), "requests.jsonl", func(*Record) error { return nil })
	if err == nil || !strings.HasPrefix(err.Error(), "record: requests.jsonl:3: ") {
		t.Fatalf("got %v", err)
	}
}

func TestManifestFillsNA(t *testing.T) {
	path := filepath.Join(t.TempDir(), "manifest.json")
	m := &Manifest{Tool: "surge", Model: "m"}
	if err := WriteManifest(path, m); err != nil {
		t.Fatal(err)
	}
	got, err := ReadManifest(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.Model != "m" || got.Hardware != NA || got.Deployment != NA {
		t.Fatalf("%+v", got)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
}

func BenchmarkAppendJSON(b *testing.B) {
	r := full()
	buf := make([]byte, 0, 1024)
	b.ReportAllocs()
	for b.Loop() {
		buf = r.AppendJSON(buf[:0])
	}
}

func TestRedactURL(t *testing.T) {
	cases := map[string]string{
		"https://u:p@h.example/v1?api_key=SECRET#frag": "https://redacted@h.example/v1?redacted",
		"http://127.0.0.1:8000/v1":                     "http://127.0.0.1:8000/v1",
		"https://h/metrics?token=abc":                  "https://h/metrics?redacted",
		"":                                             "",
		"http://[::1":                                  "(invalid URL)",
	}
	for in, want := range cases {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}
