// Command pushsink accepts what surge's --metrics-out pushes (POST
// /api/v1/write and /v1/metrics) and discards it, counting requests and
// bytes: the receiver of the push-cost benchmark (BENCHMARKS.md, "Pushing
// metrics"), so that the cost measured is surge's and not a Prometheus's.
// Loopback only.
//
//	go run ./bench/pushsink --addr 127.0.0.1:18081
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:18081", "loopback address to listen on")
	flag.Parse()
	if host, _, err := net.SplitHostPort(*addr); err != nil || !net.ParseIP(host).IsLoopback() {
		log.Fatalf("pushsink: --addr must be a loopback host:port, got %q", *addr)
	}
	var posts, bytes atomic.Int64
	sink := func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		posts.Add(1)
		bytes.Add(n)
		w.WriteHeader(http.StatusNoContent)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v1/write", sink)
	mux.HandleFunc("POST /v1/metrics", sink)
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	go http.Serve(ln, mux)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	fmt.Printf("pushsink: %d posts, %d bytes\n", posts.Load(), bytes.Load())
}
