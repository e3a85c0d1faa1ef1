package scrape

import (
	"bytes"
	"testing"
)

// The Prometheus text parser reads a page from a server surge does not
// control: it never panics.
func FuzzParseText(f *testing.F) {
	for _, s := range []string{
		"# HELP vllm:num_requests_waiting waiting\n# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{model_name=\"m\"} 3\n",
		"# TYPE h histogram\nh_bucket{le=\"0.1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 0.3\nh_count 2\n",
		"x{a=\"\\\"\"} NaN 1700000000000\n",
		"# TYPE \"do.h\" histogram\n{\"do.h_bucket\",\"a.b\"=\"1\",le=\"+Inf\"} 2\n{\"do.h_sum\",\"a.b\"=\"1\"} 0.5\n{\"do.h_count\",\"a.b\"=\"1\"} 2\n",
		"x{",
		"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, page []byte) {
		_, _ = ParseText(bytes.NewReader(page))
	})
}

// engine.csv written by an older surge or edited by hand: never a panic.
func FuzzReadCSV(f *testing.F) {
	f.Add([]byte("t_ms,metric,value\n0,vllm:num_requests_waiting,3\n"))
	f.Add([]byte("t_ms,metric\n1,\"a\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = ReadCSV(bytes.NewReader(b))
	})
}
