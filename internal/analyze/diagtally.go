package analyze

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/surge-bench/surge/internal/record"
)

// DiagTally is what the diagnosis reads of the records: the rejections of
// each phase (429s, 503s and their response times) and the done times of
// the successful requests from a burst's start on (MeasureCapacity's
// completions). An accumulator (NewDiagTally, Add), so that the run's one
// pass over its records gathers it with the rest of the analysis; what it
// keeps is a number per rejection and per completion after the burst
// start, none for a run without a burst.
type DiagTally struct {
	doneFrom   int64 // -1: no done times
	n429, n503 map[string]int64
	// status4xx counts the other client errors (4xx but 429) by phase
	// and status: requests the target refused as invalid, which no load
	// explains.
	status4xx map[phaseStatus]int64
	times     map[string][]float64 // rejections' done − sent, ms, by phase
	done      []int64
	sorted    bool
	// faults counts every failure by its cause (FaultOf), by phase;
	// details keeps, per fault, the client's short error classes seen
	// (at most maxFaultDetails distinct ones) to name an example.
	faults  map[string]*FaultCounts
	details [numFaults]map[string]int64
}

// maxFaultDetails bounds the distinct error classes kept per fault.
const maxFaultDetails = 8

// NewDiagTally returns an empty DiagTally keeping the done times from
// doneFromNs on (the burst's start; -1 for none).
func NewDiagTally(doneFromNs int64) *DiagTally {
	return &DiagTally{doneFrom: doneFromNs, n429: map[string]int64{}, n503: map[string]int64{}, status4xx: map[phaseStatus]int64{},
		times: map[string][]float64{}, faults: map[string]*FaultCounts{}}
}

// DoneFrom is the start of the done times a diagnosis of an analysis with
// cfg reads (-1: none): its burst phase's start, as the Result reports it
// in ms and the diagnosis reads it back.
func DoneFrom(cfg Config) int64 {
	name := cmp.Or(cfg.BurstPhase, defaultBurstPhase)
	for _, p := range cfg.Phases {
		if p.Name == name {
			return int64(time.Duration(durMs(p.Start) * 1e6))
		}
	}
	return -1
}

// phaseStatus keys DiagTally's client errors.
type phaseStatus struct {
	phase  string
	status int
}

// Add accounts one record; it does not keep rc.
func (t *DiagTally) Add(rc *record.Record) {
	if t.doneFrom >= 0 && rc.Outcome == record.OK && rc.DoneNs != record.None && rc.DoneNs >= t.doneFrom {
		t.done, t.sorted = append(t.done, rc.DoneNs), false
	}
	if f := FaultOf(rc); f != FaultNone {
		fc := t.faults[rc.Phase]
		if fc == nil {
			fc = &FaultCounts{}
			t.faults[rc.Phase] = fc
		}
		fc[f]++
		d := t.details[f]
		if d == nil {
			d = map[string]int64{}
			t.details[f] = d
		}
		if _, ok := d[rc.Error]; ok || len(d) < maxFaultDetails {
			d[rc.Error]++
		}
	}
	switch {
	case rc.Outcome == record.RateLimited:
		t.n429[rc.Phase]++
	case rc.Outcome == record.HTTPError && rc.Status == 503:
		t.n503[rc.Phase]++
	case rc.Outcome == record.HTTPError && rc.Status/100 == 4:
		t.status4xx[phaseStatus{rc.Phase, rc.Status}]++
		return
	default:
		return
	}
	if rc.SentNs != record.None && rc.DoneNs != record.None {
		t.times[rc.Phase] = append(t.times[rc.Phase], nsToMs(rc.DoneNs-rc.SentNs))
	}
}

// Faults counts the failures of the records labelled with phases by
// cause; every failure is in one count.
func (t *DiagTally) Faults(phases []string) FaultCounts {
	var c FaultCounts
	for _, p := range slices.Compact(slices.Sorted(slices.Values(phases))) {
		if fc := t.faults[p]; fc != nil {
			for i := range c {
				c[i] += fc[i]
			}
		}
	}
	return c
}

// Detail is the client's most common error class among the failures of
// fault f (e.g. "connection refused", "not SSE (text/html)"), "" when
// none was recorded.
func (t *DiagTally) Detail(f Fault) string {
	best, n := "", int64(0)
	for s, k := range t.details[f] {
		if k > n || k == n && s < best {
			best, n = s, k
		}
	}
	return best
}

// From is the start of the done times kept (-1: none).
func (t *DiagTally) From() int64 { return t.doneFrom }

// DoneOK is the done times kept, ascending.
func (t *DiagTally) DoneOK() []int64 {
	if !t.sorted {
		slices.Sort(t.done)
		t.sorted = true
	}
	return t.done
}

// Rejections are a group's 429s and 503s (and its other client errors),
// as DiagTally.Rejections counts them.
type Rejections struct {
	N429, N503 int64
	N4xx       int64         // other client errors (4xx but 429)
	Status4xx  map[int]int64 // N4xx by status
	Offered    int64
	MedianMs   float64 // median response time (done − sent) of the rejections; NaN unknown
}

// Share is the 429s and 503s as a share of the arrivals.
func (j Rejections) Share() float64 { return ratio(j.N429+j.N503, j.Offered) }

// Share503 is the 503s as a share of the arrivals.
func (j Rejections) Share503() float64 { return ratio(j.N503, j.Offered) }

// Fast is true when the rejections' median response is within fastMs,
// or unknown (no records: a 429 is usually immediate).
func (j Rejections) Fast(fastMs float64) bool { return math.IsNaN(j.MedianMs) || j.MedianMs <= fastMs }

// Rejections counts the 429s, 503s and other 4xx of the records labelled
// with phases, of a group of offered arrivals.
func (t *DiagTally) Rejections(phases []string, offered int64) Rejections {
	j := Rejections{Offered: offered, MedianMs: math.NaN(), Status4xx: map[int]int64{}}
	var times []float64
	for _, p := range slices.Compact(slices.Sorted(slices.Values(phases))) {
		j.N429 += t.n429[p]
		j.N503 += t.n503[p]
		for k, n := range t.status4xx {
			if k.phase == p {
				j.N4xx += n
				j.Status4xx[k.status] += n
			}
		}
		times = append(times, t.times[p]...)
	}
	if len(times) > 0 {
		slices.Sort(times)
		j.MedianMs = times[(len(times)-1)/2]
	}
	return j
}
