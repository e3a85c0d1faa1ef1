//go:build unix

package openai

import (
	"context"
	"fmt"
	"io"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/surge-bench/surge/internal/record"
)

// TestSockReaderProbes: a stream silent for longer than two probe periods
// after a short read is woken by the prober (sockread_unix.go) and goes on
// reading as if nothing happened: every chunk, OK, the connection kept.
func TestSockReaderProbes(t *testing.T) {
	const events = 5
	srv := newRawServer(t, func(_ int, conn net.Conn) bool {
		if _, err := io.WriteString(conn, sseHead+"Transfer-Encoding: chunked\r\n\r\n"+httpChunk(role())); err != nil {
			return false
		}
		for i := range events {
			if i == 2 {
				time.Sleep(6 * probeEvery)
			} else {
				time.Sleep(5 * time.Millisecond)
			}
			if _, err := io.WriteString(conn, httpChunk(content("a"))); err != nil {
				return false
			}
		}
		_, err := io.WriteString(conn, httpChunk(usage(3, events)+done)+"0\r\n\r\n")
		return err == nil
	})
	c := newTestClient(t, srv.url(), func(c *Config) { c.Transport = TransportSurge })
	for i := range 2 {
		rec := run(context.Background(), c, &testReq)
		if rec.Outcome != record.OK || rec.Chunks != events || rec.OutputTokens != events {
			t.Fatalf("request %d: %s %q, %d chunks, %d tokens; want ok with %d", i, rec.Outcome, rec.Error, rec.Chunks, rec.OutputTokens, events)
		}
	}
	if got := srv.accepted.Load(); got != 1 {
		t.Errorf("%d connections, want 1: a probe must not cost the connection", got)
	}
	if p := c.tr.(*h1Transport).pr.probes.Load(); p == 0 {
		t.Error("no probe woke the silent stream: the test did not test the prober")
	}
}

// TestSockReaderCancelledWait: a request whose timeout ends while its
// stream waits after a short read (the prober's kind of wait) ends as a
// timeout, promptly, even when probes come and go meanwhile.
func TestSockReaderCancelledWait(t *testing.T) {
	release := make(chan struct{})
	defer close(release) // before the server's cleanup, which waits for its handlers
	srv := newRawServer(t, func(_ int, conn net.Conn) bool {
		_, _ = io.WriteString(conn, sseHead+"Transfer-Encoding: chunked\r\n\r\n"+httpChunk(role()))
		time.Sleep(5 * time.Millisecond)
		_, _ = io.WriteString(conn, httpChunk(content("a")))
		<-release
		return false
	})
	c := newTestClient(t, srv.url(), func(c *Config) { c.Transport = TransportSurge; c.Timeout = 5 * probeEvery })
	start := time.Now()
	rec := run(context.Background(), c, &testReq)
	if rec.Outcome != record.Timeout || rec.Chunks != 1 {
		t.Errorf("%s %q after %d chunks, want a timeout after 1", rec.Outcome, rec.Error, rec.Chunks)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the timeout of %v took %v to end the request", 5*probeEvery, d)
	}
}

// BenchmarkFirstTokenStamp measures how late surge's transport stamps a
// streamed event with and without sockReader: a server in this process
// (the same monotonic clock) writes a response's first token at a time it
// notes, and the client's first_token_ns is compared with it. Reported:
// the delay's p50 and p90 (ns) over b.N requests, one at a time, and read
// system calls per request (/proc/self/io, server included). The two must
// agree within tens of µs: sockReader changes which read returns the
// bytes, not when they are stamped.
func BenchmarkFirstTokenStamp(b *testing.B) {
	for _, on := range []bool{false, true} {
		b.Run(fmt.Sprintf("sockread=%v", on), func(b *testing.B) {
			defer func(v bool) { sockReads = v }(sockReads)
			sockReads = on
			origin := time.Now()
			wrote := make(chan int64, 1)
			srv := newRawServer(b, func(_ int, conn net.Conn) bool {
				if _, err := io.WriteString(conn, sseHead+"Transfer-Encoding: chunked\r\n\r\n"); err != nil {
					return false
				}
				time.Sleep(time.Millisecond)
				ev := httpChunk(role() + content("a"))
				t := time.Since(origin).Nanoseconds()
				if _, err := io.WriteString(conn, ev); err != nil {
					return false
				}
				wrote <- t
				for range 8 {
					time.Sleep(500 * time.Microsecond)
					if _, err := io.WriteString(conn, httpChunk(content("a"))); err != nil {
						return false
					}
				}
				_, err := io.WriteString(conn, httpChunk(usage(3, 9)+done)+"0\r\n\r\n")
				return err == nil
			})
			cfg := DefaultConfig()
			cfg.BaseURL, cfg.Model, cfg.Transport = srv.url(), "test-model", TransportSurge
			c, err := New(cfg, origin)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(c.CloseIdle)
			delays := make([]int64, 0, b.N)
			reads := readSyscalls()
			b.ResetTimer()
			for i := range b.N {
				rec := record.New("b", int64(i), "baseline", 0)
				c.Do(context.Background(), &testReq, &rec)
				w := <-wrote
				if rec.Outcome != record.OK {
					b.Fatalf("%s %q", rec.Outcome, rec.Error)
				}
				delays = append(delays, rec.FirstTokenNs-w)
			}
			b.StopTimer()
			slices.Sort(delays)
			b.ReportMetric(float64(delays[len(delays)/2]), "p50-ns")
			b.ReportMetric(float64(delays[len(delays)*9/10]), "p90-ns")
			if reads >= 0 {
				b.ReportMetric(float64(readSyscalls()-reads)/float64(b.N), "reads/req")
			}
		})
	}
}
