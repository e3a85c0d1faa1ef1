// Package memnet is an in-memory network: a listener whose connections
// are the far ends of net.Pipe pairs. A whole run — the simulator serving
// HTTP, the client streaming, the scraper — can then execute inside a
// testing/synctest bubble, where real sockets are not allowed, with every
// byte exchanged between goroutines of the bubble.
package memnet

import (
	"context"
	"errors"
	"net"
	"sync"
)

// Network is one in-memory network with one listener, created on the
// first Listen. Its zero value is ready to use.
type Network struct {
	mu sync.Mutex
	ln *listener
}

// ErrClosed is returned by Dial and Accept once the listener is closed.
var ErrClosed = errors.New("memnet: closed")

// Listen returns the network's listener; addr is ignored.
func (n *Network) Listen(_ context.Context, _ string) (net.Listener, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ln == nil {
		n.ln = &listener{conns: make(chan net.Conn), done: make(chan struct{})}
	}
	return n.ln, nil
}

// DialContext connects to the listener, whatever the address.
func (n *Network) DialContext(ctx context.Context, _, _ string) (net.Conn, error) {
	ln, _ := n.Listen(ctx, "")
	l := ln.(*listener)
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
		client.Close()
		server.Close()
		return nil, ErrClosed
	case <-ctx.Done():
		client.Close()
		server.Close()
		return nil, ctx.Err()
	}
}

type listener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func (l *listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, ErrClosed
	}
}

func (l *listener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *listener) Addr() net.Addr { return addr{} }

type addr struct{}

func (addr) Network() string { return "memnet" }
func (addr) String() string  { return "memnet:80" }
