package memnet

import (
	"context"
	"errors"
	"io"
	"testing"
)

func TestDialAcceptClose(t *testing.T) {
	var n Network
	ln, err := n.Listen(context.Background(), "ignored:1")
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
