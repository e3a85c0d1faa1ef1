//go:build !unix

package openai

import "net"

// sockReader is surge's empty-read-free socket reader (sockread_unix.go);
// where there is none, connections are read as they are.
type sockReader struct{}

type prober struct{}

func newSockReader(net.Conn, *prober) *sockReader { return nil }

func (s *sockReader) Read([]byte) (int, error) { panic("openai: no sockReader here") }

func (s *sockReader) endRead()   {}
func (s *sockReader) cancel()    {}
func (s *sockReader) reuse()     {}
func (s *sockReader) plainRead() {}
