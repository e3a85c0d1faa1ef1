package memnet

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
)

func TestDialAcceptClose(t *testing.T) {
	var n Network
	ln, err := n.Listen(context.Background(), "ignored:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan string)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- err.Error()
			return
		}
		b, _ := io.ReadAll(c)
		done <- string(b)
	}()
	c, err := n.DialContext(context.Background(), "tcp", "anything:80")
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte("hello"))
	c.Close()
	if got := <-done; got != "hello" {
		t.Fatalf("server read %q", got)
	}
	ln.Close()
	if _, err := ln.Accept(); !errors.Is(err, ErrClosed) {
		t.Errorf("Accept after Close: %v", err)
	}
	if _, err := n.DialContext(context.Background(), "tcp", "x"); !errors.Is(err, ErrClosed) {
		t.Errorf("Dial after Close: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var m Network
	if _, err := m.DialContext(ctx, "tcp", "x"); !errors.Is(err, context.Canceled) {
		t.Errorf("Dial with a cancelled context and nobody accepting: %v", err)
	}
}

// A listener of an explicit address gets the dials of that address alone;
// a second Listen there is refused while it is open.
func TestNamedListener(t *testing.T) {
	var n Network
	def, _ := n.Listen(context.Background(), "127.0.0.1:0")
	named, err := n.Listen(context.Background(), "127.0.0.1:4318")
	if err != nil || named.Addr().String() != "127.0.0.1:4318" || def.Addr().String() != "memnet:80" {
		t.Fatalf("listen: %v, %s, %s", err, named.Addr(), def.Addr())
	}
	if _, err := n.Listen(context.Background(), "127.0.0.1:4318"); !errors.Is(err, ErrInUse) {
		t.Errorf("second listen: %v", err)
	}
	got := make(chan string, 2)
	for _, l := range []net.Listener{def, named} {
		go func() {
			c, err := l.Accept()
			if err == nil {
				got <- l.Addr().String()
				c.Close()
			}
		}()
	}
	for _, a := range []string{"127.0.0.1:4318", "elsewhere:1"} {
		c, err := n.DialContext(context.Background(), "tcp", a)
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
		want := "memnet:80"
		if a == "127.0.0.1:4318" {
			want = a
		}
		if g := <-got; g != want {
			t.Errorf("dial %s reached %s, want %s", a, g, want)
		}
	}
}
