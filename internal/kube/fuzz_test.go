package kube

import (
	"bytes"
	"testing"
)

// kubectl's watch stream is read as it comes: a torn or hostile stream
// never panics the decoder.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"type":"ADDED","object":{"kind":"Pod","metadata":{"name":"p","namespace":"ns"},"status":{"phase":"Running"}}}` + "\n"))
	f.Add([]byte(`{"kind":"Deployment","metadata":{"name":"d"},"spec":{"replicas":2}}{"kind":`))
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = Decode(bytes.NewReader(b), func(string, *Object) {})
	})
}
