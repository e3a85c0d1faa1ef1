//go:build linux

// Command floor measures the floor of a Go load generator's CPU on the
// bench/run.sh setup: one goroutine on a level-triggered epoll (Linux),
// open-loop constant arrivals, keep-alive connections, one read per
// readiness report (so no read finds the socket empty), a timestamp per
// read and the first token's time, and nothing else — no SSE or JSON
// parsing, no records, no analysis. It is not surge: it answers how much
// of a client's CPU per streamed request is the kernel's and the runtime's
// whatever the client does (BENCHMARKS.md, "Empty reads"). It expects
// bench/sseserver's responses (the last write ends with the chunked
// terminator) and reports CPU per 1,000 requests, TTFT and send lag.
//
// With --netpoll it does the same the way a Go client usually does, and
// surge does: a goroutine per request in flight (started per request, as
// `go` does, or reused, --reuse) on Go's own poller, net.Conn reads (so a
// read that finds the socket empty parks the goroutine), an idle-connection
// pool under a mutex, and a pacer goroutine sleeping to each arrival's
// absolute time. Set against the epoll loop, it prices Go's
// goroutine-per-stream model alone, with none of surge's parsing.
//
//	taskset -c 1 sseserver --addr 127.0.0.1:18790 &
//	taskset -c 0 floor --addr 127.0.0.1:18790 --rate 1000 --duration 10s
//	taskset -c 0 floor --addr 127.0.0.1:18790 --rate 1000 --duration 10s --netpoll
package main

import (
	"bytes"
	"flag"
	"fmt"
	"net"
	"os"
	"sort"
	"sync"
	"syscall"
	"time"
)

type conn struct {
	fd     int
	buf    []byte
	sent   int64
	first  int64
	events int
}

func main() {
	addr := flag.String("addr", "127.0.0.1:18790", "bench/sseserver's address (loopback)")
	rate := flag.Float64("rate", 1000, "constant arrivals per second")
	dur := flag.Duration("duration", 10*time.Second, "schedule length")
	netpoll := flag.Bool("netpoll", false, "a goroutine per request on Go's poller instead of one epoll loop")
	reuse := flag.Bool("reuse", false, "with --netpoll: reuse finished request goroutines instead of starting one per request")
	flag.Parse()
	body := []byte(`{"model":"bench","messages":[{"role":"user","content":"` + string(bytes.Repeat([]byte("a"), 500)) + `"}],"max_tokens":64,"stream":true}`)
	req := []byte(fmt.Sprintf("POST /v1/chat/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", *addr, len(body)))
	req = append(req, body...)
	if *netpoll {
		goroutines(*addr, req, *rate, *dur, *reuse)
		return
	}
	ep, err := syscall.EpollCreate1(0)
	if err != nil {
		panic(err)
	}
	conns := map[int]*conn{}
	var idle []*conn
	dial := func() *conn {
		nc, err := net.Dial("tcp", *addr)
		if err != nil {
			panic(err)
		}
		f, err := nc.(*net.TCPConn).File() // a dup of the socket, made non-blocking below
		if err != nil {
			panic(err)
		}
		nc.Close()
		fd := int(f.Fd())
		syscall.SetNonblock(fd, true)
		c := &conn{fd: fd, buf: make([]byte, 4096)}
		conns[fd] = c
		ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP, Fd: int32(fd)}
		if err := syscall.EpollCtl(ep, syscall.EPOLL_CTL_ADD, fd, &ev); err != nil {
			panic(err)
		}
		files = append(files, f) // keep the descriptor open
		return c
	}
	origin := time.Now()
	now := func() int64 { return int64(time.Since(origin)) }
	gap := int64(float64(time.Second) / *rate)
	n := int(float64(*dur) / float64(gap))
	next := 0
	done := 0
	var ttft, lag []int64
	evs := make([]syscall.EpollEvent, 256)
	term := []byte("0\r\n\r\n")
	for done < n {
		t := now()
		for next < n && int64(next)*gap <= t {
			var c *conn
			if k := len(idle); k > 0 {
				c, idle = idle[k-1], idle[:k-1]
			} else {
				c = dial()
			}
			c.sent, c.first, c.events = now(), -1, 0
			lag = append(lag, c.sent-int64(next)*gap)
			if _, err := syscall.Write(c.fd, req); err != nil {
				panic(err)
			}
			next++
		}
		timeout := -1 // ms, rounded up: a send is at most 1 ms late for it
		if next < n {
			timeout = int((int64(next)*gap - now() + int64(time.Millisecond) - 1) / int64(time.Millisecond))
			if timeout < 0 {
				timeout = 0
			}
		}
		k, err := syscall.EpollWait(ep, evs, timeout)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			panic(err)
		}
		for i := 0; i < k; i++ {
			c := conns[int(evs[i].Fd)]
			m, err := syscall.Read(c.fd, c.buf)
			if err == syscall.EAGAIN {
				continue
			}
			if err != nil || m == 0 {
				fmt.Fprintln(os.Stderr, "closed", err)
				os.Exit(1)
			}
			t := now()
			data := c.buf[:m]
			e := bytes.Count(data, []byte("data: "))
			if e > 0 && c.events == 0 && c.first < 0 {
				c.first = t
			}
			c.events += e
			if bytes.HasSuffix(data, term) {
				ttft = append(ttft, c.first-c.sent)
				idle = append(idle, c)
				done++
			}
		}
	}
	report(n, time.Since(origin), len(conns), ttft, lag)
}

// report prints the run's line: requests, CPU per 1,000, TTFT and lag.
func report(n int, el time.Duration, conns int, ttft, lag []int64) {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	sort.Slice(ttft, func(i, j int) bool { return ttft[i] < ttft[j] })
	sort.Slice(lag, func(i, j int) bool { return lag[i] < lag[j] })
	fmt.Printf("requests %d in %v, conns %d; CPU %v = %.3f CPU-s per 1k; TTFT p50 %.2f ms p99 %.2f ms; lag p99 %.2f ms\n",
		n, el.Round(time.Millisecond), conns, cpu.Round(time.Millisecond), cpu.Seconds()/float64(n)*1000,
		float64(ttft[len(ttft)/2])/1e6, float64(ttft[len(ttft)*99/100])/1e6, float64(lag[len(lag)*99/100])/1e6)
}

// goroutines is --netpoll: the same schedule, requests and reading, with a
// goroutine per request in flight on Go's poller.
func goroutines(addr string, req []byte, rate float64, dur time.Duration, reuse bool) {
	origin := time.Now()
	now := func() int64 { return int64(time.Since(origin)) }
	gap := int64(float64(time.Second) / rate)
	n := int(float64(dur) / float64(gap))
	var (
		mu        sync.Mutex
		idle      []net.Conn
		conns     int
		ttft, lag []int64
		wg        sync.WaitGroup
	)
	term := []byte("0\r\n\r\n")
	one := func(at int64) {
		mu.Lock()
		var nc net.Conn
		if k := len(idle); k > 0 {
			nc, idle = idle[k-1], idle[:k-1]
		}
		mu.Unlock()
		sent := now()
		if nc == nil {
			var err error
			if nc, err = net.Dial("tcp", addr); err != nil {
				panic(err)
			}
			mu.Lock()
			conns++
			mu.Unlock()
		}
		if _, err := nc.Write(req); err != nil {
			panic(err)
		}
		var buf [4096]byte
		first := int64(-1)
		for {
			m, err := nc.Read(buf[:])
			if err != nil {
				fmt.Fprintln(os.Stderr, "read:", err)
				os.Exit(1)
			}
			if first < 0 && bytes.Contains(buf[:m], []byte("data: ")) {
				first = now()
			}
			if bytes.HasSuffix(buf[:m], term) {
				break
			}
		}
		mu.Lock()
		idle = append(idle, nc)
		ttft = append(ttft, first-sent)
		lag = append(lag, sent-at)
		mu.Unlock()
	}
	work := make(chan int64)
	worker := func(at int64) {
		defer wg.Done()
		for ok := true; ok; at, ok = <-work {
			one(at)
			if !reuse {
				return
			}
		}
	}
	for i := range n {
		at := int64(i) * gap
		if d := time.Duration(at - now()); d > 0 {
			time.Sleep(d)
		}
		select {
		case work <- at:
		default:
			wg.Add(1)
			go worker(at)
		}
	}
	close(work)
	wg.Wait()
	report(n, time.Since(origin), conns, ttft, lag)
}

var files []*os.File
