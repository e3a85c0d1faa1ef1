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

// Network is one in-memory network. Its default listener, created on the
// first Listen or Dial, takes every address no other listener has; a
// Listen on an address with an explicit port ("127.0.0.1:4318") creates a
// listener of that address alone, which a Dial of exactly that address
// reaches. Its zero value is ready to use.
type Network struct {
	mu    sync.Mutex
	ln    *listener
	named map[string]*listener
}

// ErrClosed is returned by Dial and Accept once the listener is closed.
var ErrClosed = errors.New("memnet: closed")

// ErrInUse is returned by Listen on an address a listener already has.
var ErrInUse = errors.New("memnet: address already in use")

// Listen returns the listener of addr when it has an explicit port, else
// the network's default listener.
func (n *Network) Listen(_ context.Context, address string) (net.Listener, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, port, err := net.SplitHostPort(address); err == nil && port != "0" && port != "" {
		if l, ok := n.named[address]; ok && !l.closed() {
			return nil, ErrInUse
		}
		if n.named == nil {
			n.named = map[string]*listener{}
		}
		l := newListener(address)
		n.named[address] = l
		return l, nil
	}
	return n.defaultListener(), nil
}

func (n *Network) defaultListener() *listener {
	if n.ln == nil {
		n.ln = newListener("")
	}
	return n.ln
}

func newListener(name string) *listener {
	return &listener{conns: make(chan net.Conn), done: make(chan struct{}), name: name}
}

// DialContext connects to the listener of addr, or to the default one.
func (n *Network) DialContext(ctx context.Context, _, address string) (net.Conn, error) {
	n.mu.Lock()
	l, ok := n.named[address]
	if !ok {
		l = n.defaultListener()
	}
	n.mu.Unlock()
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
	name  string // "" for the default listener
}

func (l *listener) closed() bool {
	select {
	case <-l.done:
		return true
	default:
		return false
	}
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

func (l *listener) Addr() net.Addr {
	if l.name != "" {
		return addr(l.name)
	}
	return addr("memnet:80")
}

type addr string

func (addr) Network() string  { return "memnet" }
func (a addr) String() string { return string(a) }
