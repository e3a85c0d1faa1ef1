// Package webview serves a run's live page (--web ADDR): the charts of
// the live values, the phase, the SLO clauses as they stand and the
// requests in flight, updated every second over server-sent events; when
// the command ends, the page turns into its final report.html.
//
// The run never waits for a browser: Publish hands each connected page a
// snapshot through a small buffer and drops a page that does not keep up;
// a page that disconnects is forgotten. A page that connects mid-run gets
// the current run's history first.
package webview

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/surge-bench/surge/internal/report"
)

// Clause is one SLO clause as it stands while the run goes: a live value
// against the limit, not the verdict (that is decided on the run's whole
// sample when it ends).
type Clause struct {
	Name  string   `json:"name"`  // e.g. "p95 TTFT, last 10 s"
	Value *float64 `json:"value"` // nil: no data yet
	Limit float64  `json:"limit"`
	Unit  string   `json:"unit"`  // "s" or "%"
	Above bool     `json:"above"` // the clause holds when Value ≥ Limit (goodput), else ≤
	N     int64    `json:"n"`     // requests the value is of (0 when unknown)
}

// Snapshot is the page's view of one moment of a run.
type Snapshot struct {
	Run       string   `json:"run"`
	Phase     string   `json:"phase"`
	ElapsedS  float64  `json:"elapsed_s"`
	TotalS    float64  `json:"total_s"`
	Offered   float64  `json:"offered"`
	Sent      float64  `json:"sent"`
	Completed float64  `json:"completed"`
	Goodput   float64  `json:"goodput"`
	InFlight  int64    `json:"in_flight"`
	Waiting   *float64 `json:"waiting"`
	TTFTP95S  *float64 `json:"ttft_p95_s"`
	E2EP99S   *float64 `json:"e2e_p99_s"`
	Errors    int64    `json:"errors"`
	Drops     int64    `json:"drops"`
	LagMaxS   float64  `json:"lag_max_s"`
	Clauses   []Clause `json:"clauses"`
}

// historyCap bounds the snapshots kept for a page that connects late (an
// hour at one a second); beyond it the oldest half is dropped.
const historyCap = 3600

// Server is the live page's HTTP server.
type Server struct {
	ln    net.Listener
	srv   *http.Server
	title string

	mu       sync.Mutex
	run      string
	history  [][]byte // the current run's snapshots, JSON
	first    int      // the sequence number of history[0] (the oldest kept)
	pages    map[*page]struct{}
	final    []byte        // the final event's data once the command is done
	reportAt string        // report.html's path ("" when none was written)
	fetched  chan struct{} // closed when every page open at Final has fetched the report
	waiting  int           // pages yet to fetch it
}

type page struct {
	ch chan []byte // events, each a whole "event: …\ndata: …\n\n"
}

// Normalize makes a --web value an address to listen on: a bare port or
// ":port" listens on loopback only; another interface only when named.
func Normalize(addr string) (string, error) {
	if _, err := strconv.Atoi(addr); err == nil {
		addr = ":" + addr
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("want host:port or a port, got %q", addr)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}

// Listen listens on addr (see Normalize) for a page titled title.
func Listen(addr, title string) (*Server, error) {
	a, err := Normalize(addr)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", a)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) && op.Err != nil {
			err = op.Err
		}
		return nil, fmt.Errorf("cannot listen on %s: %v", a, err)
	}
	s := &Server{ln: ln, title: title, pages: map[*page]struct{}{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.index)
	mux.HandleFunc("GET /events", s.events)
	mux.HandleFunc("GET /report.html", s.report)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go s.srv.Serve(ln)
	return s, nil
}

// URL is the page's address.
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() + "/" }

// index is the page, with the current run's history inline so that it
// draws at once; its event stream then starts after that history.
func (s *Server) index(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	hist := bytes.Join(s.history, []byte(","))
	run, next := s.run, s.first+len(s.history)
	s.mu.Unlock()
	var b bytes.Buffer
	name, _ := json.Marshal(run)
	state := fmt.Appendf(nil, `{"run":%s,"from":%d,"history":[%s]}`, name, next, hist)
	if err := report.WriteLivePage(&b, s.title, state); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(b.Bytes())
}

// events streams the snapshots: the current run's history first — from
// the snapshot after the last one the page holds (a reconnecting
// browser's Last-Event-ID, "SEQ RUN", or else ?from=SEQ&run=RUN: the
// page's first count) — then each new one, and "final" when the command
// is done. Each status event's id is its sequence number and run.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	q := r.URL.Query()
	run, from := q.Get("run"), q.Get("from")
	if last := r.Header.Get("Last-Event-ID"); last != "" {
		seq, name, _ := strings.Cut(last, " ")
		n, err := strconv.Atoi(seq)
		run, from = name, strconv.Itoa(n+1)
		if err != nil {
			from = ""
		}
	}
	p := &page{ch: make(chan []byte, 64)}
	s.mu.Lock()
	start := 0 // index into history
	if n, err := strconv.Atoi(from); err == nil && run == s.run {
		start = min(max(n-s.first, 0), len(s.history))
	}
	backlog := make([][]byte, 0, len(s.history)-start+1)
	for i, h := range s.history[start:] {
		backlog = append(backlog, s.status(s.first+start+i, h))
	}
	if s.final != nil {
		backlog = append(backlog, event("final", s.final))
	}
	s.pages[p] = struct{}{}
	s.mu.Unlock()
	defer s.forget(p)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	for _, e := range backlog {
		if _, err := w.Write(e); err != nil {
			return
		}
	}
	fl.Flush()
	for {
		select {
		case <-r.Context().Done():
			return // the browser went away
		case e, ok := <-p.ch:
			if !ok {
				return // dropped: it did not keep up
			}
			if _, err := w.Write(e); err != nil {
				return
			}
			fl.Flush()
		}
	}
}

func (s *Server) forget(p *page) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.pages, p)
}

func event(name string, data []byte) []byte {
	return fmt.Appendf(nil, "event: %s\ndata: %s\n\n", name, data)
}

// status is snapshot seq of the current run as an event, its id "SEQ RUN"
// for a reconnecting browser's Last-Event-ID.
func (s *Server) status(seq int, data []byte) []byte {
	return fmt.Appendf(nil, "id: %d %s\nevent: status\ndata: %s\n\n", seq, strings.NewReplacer("\n", " ", "\r", " ").Replace(s.run), data)
}

// Publish shows sn on every page; it never waits. A new run name starts a
// new history.
func (s *Server) Publish(sn Snapshot) {
	if s == nil {
		return
	}
	data, err := json.Marshal(sn)
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if sn.Run != s.run {
		s.run, s.history, s.first = sn.Run, nil, 0
	}
	if len(s.history) >= historyCap {
		s.first += historyCap / 2
		s.history = append(s.history[:0], s.history[historyCap/2:]...)
	}
	s.history = append(s.history, data)
	s.broadcast(s.status(s.first+len(s.history)-1, data))
}

// broadcast sends e to every page; a page whose buffer is full is
// dropped (its stream ends; the browser reconnects and gets the
// history). Called with s.mu held.
func (s *Server) broadcast(e []byte) {
	for p := range s.pages {
		select {
		case p.ch <- e:
		default:
			close(p.ch)
			delete(s.pages, p)
		}
	}
}

// Final tells every page that the command is done. With report.html
// written (path), the pages load it, and Final waits until each page open
// now has fetched it, or until wait has passed; with path "" (the command
// failed before its report), the pages say so and stay. Nil-safe.
func (s *Server) Final(path string, wait time.Duration) {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.reportAt = path
	s.final = []byte(`{"report":true}`)
	s.waiting = len(s.pages)
	if path == "" {
		s.final, s.waiting = []byte(`{"report":false}`), 0
	}
	s.fetched = make(chan struct{})
	if s.waiting == 0 {
		close(s.fetched)
	}
	s.broadcast(event("final", s.final))
	fetched := s.fetched
	s.mu.Unlock()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-fetched:
	case <-t.C:
	}
}

func (s *Server) report(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	path, done := s.reportAt, s.final != nil
	s.mu.Unlock()
	if path == "" {
		msg := "the run is still going: report.html is written when it ends"
		if done {
			msg = "the command ended without writing report.html"
		}
		http.Error(w, msg, http.StatusNotFound)
		return
	}
	b, err := os.ReadFile(path)
	if err != nil {
		http.Error(w, "report.html could not be read", http.StatusNotFound) // never the path: the page may be served beyond loopback
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(b)
	s.mu.Lock()
	if s.waiting > 0 {
		s.waiting--
		if s.waiting == 0 {
			close(s.fetched)
		}
	}
	s.mu.Unlock()
}

// Close stops the server. Nil-safe.
func (s *Server) Close() error {
	if s == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	s.srv.Shutdown(ctx)
	return s.srv.Close()
}
