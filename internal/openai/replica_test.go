package openai

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestReplicaHeaderConfigurable: Config.ReplicaHeader names the response
// header read into Record.Replica (a pod's name from a gateway, say);
// the default stays the simulator's X-Surge-Replica.
func TestReplicaHeaderConfigurable(t *testing.T) {
	h := sseHandler(role(), content("a"), finish(), usage(3, 1), done)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Pod-Name", "vllm-7d9f6c5b8-p8q2n")
		w.Header().Set(ReplicaHeader, "r2")
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	for _, tc := range []struct{ header, want string }{{"", "r2"}, {"x-pod-name", "vllm-7d9f6c5b8-p8q2n"}, {"X-Absent", ""}} {
		c := newTestClient(t, srv.URL+"/v1", func(c *Config) { c.ReplicaHeader = tc.header })
		if rec := run(context.Background(), c, &testReq); rec.Replica != tc.want {
			t.Errorf("ReplicaHeader %q: replica %q, want %q", tc.header, rec.Replica, tc.want)
		}
	}
}
