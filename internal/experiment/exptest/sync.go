package exptest

import (
	"strings"
	"sync"
)

// SyncBuilder is a strings.Builder safe for one writer and concurrent
// readers (a live view writes while a test reads).
type SyncBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

// Write appends p.
func (s *SyncBuilder) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *SyncBuilder) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
