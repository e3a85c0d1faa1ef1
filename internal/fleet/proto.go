package fleet

import (
	"time"

	"github.com/surge-bench/surge/internal/openai"
	"github.com/surge-bench/surge/internal/schedule"
	"github.com/surge-bench/surge/internal/workload"
)

// The coordinator's endpoints (see the package doc).
const (
	pathTime     = "/fleet/v1/time"
	pathRegister = "/fleet/v1/register"
	pathControl  = "/fleet/v1/control"
	pathBeat     = "/fleet/v1/beat"
	pathRecords  = "/fleet/v1/records"
	pathBye      = "/fleet/v1/bye"
)

// stopInterrupted is a final batch's stop= when the worker was
// interrupted on its machine (Ctrl-C, SIGTERM), with at= the moment, ns
// since the run's origin.
const stopInterrupted = "interrupted"

// Defaults of the protocol's timing.
const (
	DefaultLostAfter    = 5 * time.Second        // silence after which a worker is lost
	DefaultFlushEvery   = 200 * time.Millisecond // a worker sends its records at least this often
	DefaultFlushRecords = 500                    // … or once this many wait
	DefaultBeatEvery    = time.Second            // heartbeat and control-stream ping period
	MaxLead             = 5 * time.Second        // the longest a run's origin is set ahead
)

// hello is a worker's registration.
type hello struct {
	Name     string    `json:"name"`
	Version  string    `json:"version"`
	Started  time.Time `json:"started"`
	OffsetNs int64     `json:"offset_ns"`
	RTTNs    int64     `json:"rtt_ns"`
}

// welcome is the coordinator's answer to hello.
type welcome struct {
	Index   int    `json:"index"`
	Workers int    `json:"workers"`
	Error   string `json:"error,omitempty"`
}

// clockReading is the coordinator's clock, ns (package doc: one clock).
type clockReading struct {
	Now int64 `json:"now"`
}

// message is one line of the control stream.
type message struct {
	Ping bool   `json:"ping,omitempty"`
	Job  *job   `json:"job,omitempty"`
	Cmd  string `json:"cmd,omitempty"` // cmdStop or cmdCancel, for job JobID
	ID   int    `json:"id,omitempty"`
	Done bool   `json:"done,omitempty"` // no more jobs: exit
}

const (
	cmdStop   = "stop"   // end the schedule, let requests in flight finish (a Stopper)
	cmdCancel = "cancel" // cancel requests in flight too (Ctrl-C)
)

// job is one run's share for one worker.
type job struct {
	ID          int             `json:"id"`
	Index       int             `json:"index"`
	Workers     int             `json:"workers"`
	Run         string          `json:"run"`
	OriginNs    int64           `json:"origin_ns"` // the run's origin on the coordinator's clock
	Arrivals    []arrival       `json:"arrivals"`
	Workload    workload.Config `json:"workload"`
	Client      openai.Config   `json:"client"`
	MaxInFlight int             `json:"max_in_flight"`
	Spin        time.Duration   `json:"spin"`
	Profile     string          `json:"profile"`
}

// arrival is a schedule.Arrival on the wire (without trace blocks, which a
// fleet refuses).
type arrival struct {
	Seq          int64  `json:"s"`
	At           int64  `json:"t"`
	Phase        string `json:"p"`
	PromptTokens int    `json:"i,omitempty"`
	OutputTokens int    `json:"o,omitempty"`
}

func wireArrivals(as []schedule.Arrival) []arrival {
	out := make([]arrival, len(as))
	for i, a := range as {
		out[i] = arrival{Seq: a.Seq, At: int64(a.At), Phase: a.Phase, PromptTokens: a.PromptTokens, OutputTokens: a.OutputTokens}
	}
	return out
}

func (j *job) arrivals() []schedule.Arrival {
	out := make([]schedule.Arrival, len(j.Arrivals))
	for i, a := range j.Arrivals {
		out[i] = schedule.Arrival{Seq: a.Seq, At: time.Duration(a.At), Phase: a.Phase, PromptTokens: a.PromptTokens, OutputTokens: a.OutputTokens}
	}
	return out
}

// beat is a worker's heartbeat during a job.
type beat struct {
	InFlight int64 `json:"in_flight"`
	// The worker's load generator's counts so far: arrivals due (offered)
	// and sent, for the coordinator's live status (records come back
	// only when a request ends).
	Offered int64 `json:"offered"`
	Sent    int64 `json:"sent"`
	// A fresh offset sample (0 RTT: none) and the offset the job runs on.
	SampleOffsetNs int64 `json:"sample_offset_ns"`
	SampleRTTNs    int64 `json:"sample_rtt_ns"`
	JobOffsetNs    int64 `json:"job_offset_ns"`
	JobRTTNs       int64 `json:"job_rtt_ns"`
	// How long before the origin the job's load generator was ready
	// (negative: after); with the job's offset.
	ReadyBeforeNs int64 `json:"ready_before_ns"`
}

// clock is a process's clock in Unix ns: the wall reading at base plus the
// monotonic time since, plus skew, running rate faster than real time
// (tests inject a wrong or drifting clock with skew and rate; both 0 for
// the real one).
type clock struct {
	base time.Time
	skew time.Duration
	rate float64
}

func newClock(skew time.Duration) clock { return clock{base: time.Now(), skew: skew} }

// at is t on this clock.
func (c clock) at(t time.Time) int64 {
	d := t.Sub(c.base)
	return c.base.UnixNano() + int64(d) + int64(float64(d)*c.rate) + int64(c.skew)
}

// now is the clock's reading now.
func (c clock) now() int64 { return c.at(time.Now()) }

// time is the moment ns on this clock is, as a time.Time with a monotonic
// reading (so time.Since works across it).
func (c clock) time(ns int64) time.Time {
	return c.base.Add(time.Duration(float64(ns-c.base.UnixNano()-int64(c.skew)) / (1 + c.rate)))
}
