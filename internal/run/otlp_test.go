package run

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/surge-bench/surge/internal/field"
	"github.com/surge-bench/surge/internal/record"
)

// A run against the simulator with an OTLP receiver: the simulator sends
// vLLM-style llm_request spans (batched every 5 s), and every successful
// record ends with the engine's own timing, equal to what the simulator
// measured: in virtual time over an in-memory network a request reaches
// the engine the instant it is sent, so queue + prefill is exactly the
// TTFT from send and the engine's e2e the completion from send (to the
// nanosecond rounding of float seconds).
func TestOTLPJoinAgainstSimulator(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := quietOptions()
		o.OTLPListen = "127.0.0.1:4318"
		o.Sim.MaxNumSeqs = 2 // a queue forms: waits are not all zero
		// No request may time out: one that the engine finishes at the very
		// instant its client gives up gets a span or not depending on which
		// goroutine runs first at that instant.
		o.Timeout = 10 * time.Minute
		env := bubbleEnv(t, o, nil)
		res, err := env.Execute(context.Background(), Spec{Name: "r", Dir: testDir(t), Command: "test", Plan: onePhase(8, 10*time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		if res.Spans == nil {
			t.Fatal("no span report")
		}
		ok, queued := 0, 0
		for _, r := range recordsOf(t, res) {
			if r.Outcome != record.OK {
				continue
			}
			ok++
			if r.EngineQueueNs == record.None || r.EnginePrefillNs == record.None || r.EngineDecodeNs == record.None || r.EngineE2ENs == record.None {
				t.Fatalf("record %d without engine timing: %+v", r.Seq, r)
			}
			if r.EngineQueueNs > 0 {
				queued++
			}
			if d := r.EngineQueueNs + r.EnginePrefillNs - r.TTFTSend(); d < -2 || d > 2 {
				t.Errorf("record %d: queue %d + prefill %d ≠ TTFT from send %d", r.Seq, r.EngineQueueNs, r.EnginePrefillNs, r.TTFTSend())
			}
			if d := r.EngineE2ENs - r.E2ESend(); d < -2 || d > 2 {
				t.Errorf("record %d: engine e2e %d ≠ completion from send %d", r.Seq, r.EngineE2ENs, r.E2ESend())
			}
		}
		if ok == 0 || queued == 0 {
			t.Fatalf("%d ok, %d with a queue wait", ok, queued)
		}
		if j := res.Spans.Join; j.Joined != int64(ok) || j.Missing != 0 || j.Unmatched != 0 {
			t.Errorf("join %+v, want %d joined", j, ok)
		}
		et, found := res.EngineTiming["main"]
		if !found || et.Source != "per request (OTLP)" || et.Timed != int64(ok) || !et.Queue.Available {
			t.Fatalf("engine timing %+v", res.EngineTiming)
		}
	})
}

// An OTLP address already in use is a configuration error naming the
// field, found by Prepare before anything runs.
func TestOTLPListenInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	o := quietOptions()
	o.OTLPListen = ln.Addr().String()
	_, err = Prepare(context.Background(), o, false, nil, nil, "test")
	var ce *ConfigError
	var fe *field.Error
	if !errors.As(err, &ce) || !errors.As(err, &fe) || fe.Field != "otlp_listen" || !strings.Contains(fe.Message, "address already in use") {
		t.Fatalf("error %v, want a config error of otlp_listen", err)
	}
}
