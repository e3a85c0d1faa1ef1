package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"
)

// wantResponse is the exact byte stream of one completion of tokens tokens
// for a request body of bodyBytes bytes, written out independently of the
// server's constants: the head, then one HTTP chunk per SSE event, then the
// last (empty) chunk.
func wantResponse(tokens, bodyBytes int) string {
	chunk := func(event string) string {
		p := "data: " + event + "\n\n"
		return fmt.Sprintf("%x\r\n%s\r\n", len(p), p)
	}
	id := `{"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1718000000,"model":"bench",`
	var b strings.Builder
	b.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n")
	b.WriteString(chunk(id + `"choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`))
	for range tokens {
		b.WriteString(chunk(id + `"choices":[{"index":0,"delta":{"content":" tok"},"logprobs":null,"finish_reason":null}]}`))
	}
	b.WriteString(chunk(id + `"choices":[{"index":0,"delta":{"content":""},"logprobs":null,"finish_reason":"stop","stop_reason":null}]}`))
	p := bodyBytes / 4
	b.WriteString(chunk(id + fmt.Sprintf(`"choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`, p, tokens, p+tokens)))
	b.WriteString(chunk("[DONE]"))
	b.WriteString("0\r\n\r\n")
	return b.String()
}

func completion(body string) string {
	return fmt.Sprintf("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
}

func dial(t testing.TB, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	return c
}

// readExactly reads len(want) bytes and compares them with want.
func readExactly(t testing.TB, c net.Conn, want string) {
	t.Helper()
	got := make([]byte, len(want))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatalf("reading %d bytes: %v (got %q)", len(want), err, got)
	}
	if string(got) != want {
		i := 0
		for i < len(got) && got[i] == want[i] {
			i++
		}
		t.Fatalf("response differs at byte %d of %d:\n got …%q\nwant …%q", i, len(want), got[max(0, i-40):min(len(got), i+80)], want[max(0, i-40):min(len(want), i+80)])
	}
}

// TestResponseBytes checks every byte of whole responses, chunk framing
// included, for several token counts and prompt sizes.
func TestResponseBytes(t *testing.T) {
	for _, tc := range []struct {
		tokens int
		body   string
	}{
		{1, ""},
		{2, "{}"},
		{64, strings.Repeat("x", 4001)},
		{300, strings.Repeat("y", 123456)},
	} {
		t.Run(fmt.Sprint(tc.tokens, " tokens, body ", len(tc.body)), func(t *testing.T) {
			_, addr := start(t, Config{Tokens: tc.tokens, TTFT: time.Millisecond, Gap: 50 * time.Microsecond})
			c := dial(t, addr)
			if _, err := io.WriteString(c, completion(tc.body)); err != nil {
				t.Fatal(err)
			}
			readExactly(t, c, wantResponse(tc.tokens, len(tc.body)))
		})
	}
}

// TestKeepAlive sends several requests on one connection, one after another
// and then pipelined: each response is whole and in order, none interleaved.
func TestKeepAlive(t *testing.T) {
	s, addr := start(t, Config{Tokens: 5, TTFT: 2 * time.Millisecond, Gap: time.Millisecond})
	c := dial(t, addr)
	health := "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n\r\nok\n"
	for i := range 4 {
		body := strings.Repeat("b", 40*i)
		if _, err := io.WriteString(c, completion(body)); err != nil {
			t.Fatal(err)
		}
		readExactly(t, c, wantResponse(5, len(body)))
	}
	// Pipelined: three completions and a health check written at once; the
	// server answers them in order, each response after the previous one ends.
	if _, err := io.WriteString(c, completion("aaaa")+completion("bbbbbbbb")+"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"+completion("")); err != nil {
		t.Fatal(err)
	}
	readExactly(t, c, wantResponse(5, 4)+wantResponse(5, 8)+health+wantResponse(5, 0))
	if got := s.Requests.Load(); got != 7 {
		t.Errorf("server counted %d completions, want 7", got)
	}
	if got := s.Active.Load(); got != 1 {
		t.Errorf("%d connections open, want 1 (the same one throughout)", got)
	}
}

type truthJSON struct {
	Requests int64
	TTFT     map[string]float64 `json:"ttft_ms"`
	Late     map[string]float64 `json:"late_ms"`
	Events   int64
	Failed   int64
	Window   float64 `json:"window_s"`
}

func getTruth(t *testing.T, c net.Conn, query string) truthJSON {
	t.Helper()
	if _, err := io.WriteString(c, "GET /truth"+query+" HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	var head string
	buf := make([]byte, 1)
	for !strings.HasSuffix(head, "\r\n\r\n") {
		if _, err := io.ReadFull(c, buf); err != nil {
			t.Fatal(err)
		}
		head += string(buf)
	}
	var n int
	for _, line := range strings.Split(head, "\r\n") {
		if v, ok := strings.CutPrefix(line, "Content-Length: "); ok {
			fmt.Sscan(v, &n)
		}
	}
	if !strings.HasPrefix(head, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n") || n == 0 {
		t.Fatalf("GET /truth%s: head %q", query, head)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(c, body); err != nil {
		t.Fatal(err)
	}
	var tr truthJSON
	if err := json.Unmarshal(body, &tr); err != nil {
		t.Fatalf("GET /truth%s: %v in %s", query, err, body)
	}
	return tr
}

// TestTruth checks GET /truth: counts, the server's TTFT (≥ the configured
// TTFT, percentiles ordered), lateness ≥ 0, and ?reset=1.
func TestTruth(t *testing.T) {
	const ttft = 20 * time.Millisecond
	_, addr := start(t, Config{Tokens: 3, TTFT: ttft, Gap: time.Millisecond})
	c := dial(t, addr)
	if tr := getTruth(t, c, ""); tr.Requests != 0 || tr.Events != 0 || tr.TTFT["p50"] != 0 || tr.Late["max"] != 0 {
		t.Fatalf("before any request: %+v, want zeros", tr)
	}
	for range 4 {
		if _, err := io.WriteString(c, completion("{}")); err != nil {
			t.Fatal(err)
		}
		readExactly(t, c, wantResponse(3, 2))
	}
	tr := getTruth(t, c, "?reset=1")
	// Each response: role + token 0, tokens 1 and 2, the closing write. Every
	// write is recorded before a client can ask (the shard holds the
	// histograms' lock across a write and its record).
	if tr.Requests != 4 || tr.Events != 16 || tr.Failed != 0 {
		t.Errorf("requests %d, events %d, failed %d; want 4, 16, 0", tr.Requests, tr.Events, tr.Failed)
	}
	p50, p90, p99, mx := tr.TTFT["p50"], tr.TTFT["p90"], tr.TTFT["p99"], tr.TTFT["max"]
	if want := float64(ttft) / 1e6; p50 < want || !(p50 <= p90 && p90 <= p99 && p99 <= mx) || mx > want+1000 {
		t.Errorf("ttft_ms %v: want %v ≤ p50 ≤ p90 ≤ p99 ≤ max", tr.TTFT, want)
	}
	if l := tr.Late; l["p50"] < 0 || !(l["p50"] <= l["p90"] && l["p90"] <= l["p99"] && l["p99"] <= l["max"]) {
		t.Errorf("late_ms %v: want 0 ≤ p50 ≤ p90 ≤ p99 ≤ max", l)
	}
	if tr.Window <= 0 {
		t.Errorf("window_s %v, want > 0", tr.Window)
	}
	if tr := getTruth(t, c, ""); tr.Requests != 0 || tr.Events != 0 || tr.TTFT["max"] != 0 || tr.Late["p99"] != 0 {
		t.Errorf("after ?reset=1: %+v, want zeros", tr)
	}
	if _, err := io.WriteString(c, completion("")); err != nil {
		t.Fatal(err)
	}
	readExactly(t, c, wantResponse(3, 0))
	if tr := getTruth(t, c, ""); tr.Requests != 1 || tr.Events != 4 {
		t.Errorf("one more response: requests %d, events %d; want 1, 4", tr.Requests, tr.Events)
	}
}

// TestHist checks the histogram's percentiles against exact ones.
func TestHist(t *testing.T) {
	var h hist
	var vals []int64
	for i := int64(1); i <= 10000; i++ {
		v := i * i * 997 // 997 ns … 99.7 s, skewed
		vals = append(vals, v)
		h.add(v)
	}
	for _, q := range []float64{0.5, 0.9, 0.99, 1} {
		want := float64(vals[int(math.Ceil(q*float64(len(vals))))-1])
		got := h.quantile(q)
		if math.Abs(got-want) > want/4096 {
			t.Errorf("q%v = %v, want %v ± 1/4096", q, got, want)
		}
	}
	if h.max != vals[len(vals)-1] {
		t.Errorf("max %d, want %d", h.max, vals[len(vals)-1])
	}
	for _, v := range []int64{0, 1, 4095, 4096, 4097, 1<<20 + 12345, 50_000_000, 1<<42 - 1} {
		if i := histIndex(v); i < 0 || i >= histLen || math.Abs(histMid(i)-float64(v)) > float64(v)/4096+0.5 {
			t.Errorf("value %d: bucket %d, middle %v", v, i, histMid(i))
		}
	}
	if i := histIndex(1 << 50); i != histLen-1 {
		t.Errorf("beyond the top: bucket %d, want the last, %d", i, histLen-1)
	}
}

// TestSlowReader fills the client's socket buffer (small buffers on both
// sides, a client that does not read) so that the server's writes come up
// short: the stream leaves the scheduler for the blocking path, and once the
// client reads, every byte arrives in order. A second connection meanwhile
// is served on time by the scheduler.
func TestSlowReader(t *testing.T) {
	s, err := NewServer(Config{Tokens: 3000, TTFT: 0, Gap: 0})
	if err != nil {
		t.Fatal(err)
	}
	s.sndbuf = 4096
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	defer ln.Close()
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		if err != nil {
			return err
		}
		return serr
	}}
	slow, err := d.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	_ = slow.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.WriteString(slow, completion("abcd")+completion("efgh")); err != nil {
		t.Fatal(err)
	}
	// Wait (without reading) until a write has come up short.
	deadline := time.Now().Add(10 * time.Second)
	for s.Blocking.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no short write in 10 s")
		}
		time.Sleep(time.Millisecond)
	}
	// The scheduler still serves others meanwhile.
	fast := dial(t, ln.Addr().String())
	if _, err := io.WriteString(fast, completion("")); err != nil {
		t.Fatal(err)
	}
	readExactly(t, fast, wantResponse(3000, 0))
	readExactly(t, slow, wantResponse(3000, 4)+wantResponse(3000, 4))
	if got := s.Requests.Load(); got != 3 {
		t.Errorf("%d completions, want 3", got)
	}
}

// rawClient sends completions on one keep-alive connection and reads each
// whole response into a fixed buffer, allocating nothing itself.
type rawClient struct {
	c   net.Conn
	req []byte
	buf []byte
}

func newRawClient(t testing.TB, addr string, tokens int) *rawClient {
	c := dial(t, addr)
	_ = c.SetDeadline(time.Time{})
	body := strings.Repeat("p", 400)
	return &rawClient{c: c, req: []byte(completion(body)), buf: make([]byte, len(wantResponse(tokens, len(body))))}
}

func (r *rawClient) do() error {
	if _, err := r.c.Write(r.req); err != nil {
		return err
	}
	_, err := io.ReadFull(r.c, r.buf)
	return err
}

// TestNoAllocsPerRequest checks that a completion on a kept-alive connection
// allocates nothing anywhere in the process (server and this client): the
// read of the request, the headers, the scheduler's writes, the histograms.
func TestNoAllocsPerRequest(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	_, addr := start(t, Config{Tokens: 8, TTFT: 0, Gap: 0})
	r := newRawClient(t, addr, 8)
	for range 20 { // warm up: buffers, heap and inbox capacity
		if err := r.do(); err != nil {
			t.Fatal(err)
		}
	}
	allocs := testing.AllocsPerRun(200, func() {
		if err := r.do(); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 0.05 { // a rare runtime or testing allocation is not per request
		t.Errorf("%.2f allocations per request, want 0", allocs)
	}
}

// BenchmarkRequest measures one completion of 8 tokens (no waiting:
// TTFT 0, gap 0) over loopback on a kept-alive connection: the server's
// and this client's CPU together. go test -bench Request -benchmem ./bench/sseserver/
func BenchmarkRequest(b *testing.B) {
	s, err := NewServer(Config{Tokens: 8, TTFT: 0, Gap: 0})
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go s.Serve(ln)
	defer ln.Close()
	r := newRawClient(b, ln.Addr().String(), 8)
	b.ReportAllocs()
	for b.Loop() {
		if err := r.do(); err != nil {
			b.Fatal(err)
		}
	}
}
