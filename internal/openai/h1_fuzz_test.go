package openai

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

// cannedDial is a dialer whose every connection answers with resp, then
// closes: the request is read and discarded.
func cannedDial(resp []byte) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(context.Context, string, string) (net.Conn, error) {
		client, server := net.Pipe()
		go func() {
			go func() { _, _ = io.Copy(io.Discard, server) }()
			_, _ = server.Write(resp)
			server.Close()
		}()
		return client, nil
	}
}

// parsed is what a client made of a response: whether its head parsed,
// its status, its body (at most maxFuzzBody bytes) and whether the body
// was read to its end without an error.
type parsed struct {
	headOK bool
	status int
	body   []byte
	bodyOK bool
}

const maxFuzzBody = 1 << 20

func fuzzRequest(t *testing.T) *http.Request {
	req, err := http.NewRequest(http.MethodPost, "http://fuzz.test/v1/chat/completions", strings.NewReader(`{"model":"m"}`))
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func parseWith(t *testing.T, rt http.RoundTripper, req *http.Request) parsed {
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return parsed{}
	}
	defer resp.Body.Close()
	p := parsed{headOK: true, status: resp.StatusCode}
	var err2 error
	p.body, err2 = io.ReadAll(io.LimitReader(resp.Body, maxFuzzBody))
	p.bodyOK = err2 == nil && len(p.body) < maxFuzzBody
	return p
}

// parseLinesWith reads the body as the SSE reader does, with the body's
// own ReadSlice (lineSource), instead of Read.
func parseLinesWith(t *testing.T, rt *h1Transport, req *http.Request) parsed {
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return parsed{}
	}
	defer resp.Body.Close()
	p := parsed{headOK: true, status: resp.StatusCode}
	b := resp.Body.(*h1Body)
	for len(p.body) < maxFuzzBody {
		piece, err := b.ReadSlice('\n')
		p.body = append(p.body, piece...)
		if err == io.EOF {
			p.bodyOK = true
			break
		}
		if err != nil && err != bufio.ErrBufferFull {
			break
		}
	}
	p.bodyOK = p.bodyOK && len(p.body) < maxFuzzBody
	if len(p.body) > maxFuzzBody {
		p.body = p.body[:maxFuzzBody]
	}
	return p
}

// FuzzH1Response feeds surge's own HTTP/1.1 client (the default for
// http:// targets) responses from a server nobody controls, and compares
// what it makes of them with net/http's reading of the same bytes: it
// never panics or hangs; where both read a response head, the statuses
// agree; where both read a body to its end, the bodies agree; and where
// net/http reads a whole HTTP/1.x response, so does surge's client. The
// body read line by line (h1Body.ReadSlice, as streams are read) is the
// body read with Read, byte for byte, and ends the same way.
func FuzzH1Response(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n5\r\ndata:\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
		"HTTP/1.0 200 OK\r\n\r\nuntil close",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 3\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;ext=1\r\nabc\r\n0\r\nTrailer: x\r\n\r\n",
		"HTTP/1.1 204 No Content\r\nContent-Length: 10\r\n\r\n",
		"HTTP/2 200\r\n\r\n",
		"HTTP/1.1 20 OK\r\n\r\n",
		"garbage\r\n\r\n",
		"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, resp []byte) {
		ours := newH1Transport("fuzz.test", endpointInfo("http", "fuzz.test"), nil, cannedDial(resp), 1, false)
		theirs := &http.Transport{DialContext: cannedDial(resp), DisableKeepAlives: true, DisableCompression: true}
		defer theirs.CloseIdleConnections()
		a := parseWith(t, ours, fuzzRequest(t))
		b := parseWith(t, theirs, fuzzRequest(t))
		if a.headOK && b.headOK && a.status != b.status {
			t.Fatalf("status %d, net/http %d", a.status, b.status)
		}
		if a.bodyOK && b.bodyOK && a.status == b.status && !bytes.Equal(a.body, b.body) {
			t.Fatalf("body %q, net/http %q", a.body, b.body)
		}
		// surge's client refuses deliberately what net/http lets through: a
		// version other than HTTP/1.x.
		http1 := bytes.HasPrefix(resp, []byte("HTTP/1.")) && len(resp) > 8 && resp[8] == ' '
		if http1 && b.bodyOK && b.status >= 200 && !a.bodyOK {
			t.Fatalf("net/http read a whole %d response (%q) that surge's client did not (head %v)", b.status, b.body, a.headOK)
		}
		lines := newH1Transport("fuzz.test", endpointInfo("http", "fuzz.test"), nil, cannedDial(resp), 1, false)
		l := parseLinesWith(t, lines, fuzzRequest(t))
		if l.headOK != a.headOK || l.status != a.status || l.bodyOK != a.bodyOK || a.bodyOK && !bytes.Equal(l.body, a.body) {
			t.Fatalf("read by lines: head %v status %d body %q (whole %v); by Read: head %v status %d body %q (whole %v)",
				l.headOK, l.status, l.body, l.bodyOK, a.headOK, a.status, a.body, a.bodyOK)
		}
	})
}
