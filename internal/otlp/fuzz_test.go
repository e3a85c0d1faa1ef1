package otlp

import (
	"testing"
)

// An OTLP export is a peer's bytes: the protobuf and JSON decoders never
// panic on them.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"0af7651916cd43dd8448eb211c80319c","name":"llm_request","attributes":[{"key":"gen_ai.request.id","value":{"stringValue":"surge-1"}}]}]}]}]}`))
	f.Add([]byte{0x0a, 0x02, 0x12, 0x00})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := &Receiver{}
		_, _ = r.decodeProto(b)
		_, _ = r.decodeJSON(b)
	})
}
