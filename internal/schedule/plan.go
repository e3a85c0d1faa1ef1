package schedule

import (
	"fmt"
	"math"
	"path/filepath"
	"time"

	"github.com/surge-bench/surge/internal/field"
)

// The phase names of the burst experiment (docs/method.md §3).
const (
	PhaseWarmup   = "warmup"
	PhaseBaseline = "baseline"
	PhaseBurst    = "burst"
	PhaseRecovery = "recovery"
	// PhaseDrain follows the plan of a sessions run with a session drain:
	// no arrivals, only later turns of sessions already started.
	PhaseDrain = "drain"
)

// The default phase lengths of the burst experiment (docs/method.md §3).
const (
	DefaultWarmup   = 2 * time.Minute
	DefaultBaseline = 5 * time.Minute
	DefaultBurst    = 1 * time.Minute
	DefaultRecovery = 5 * time.Minute
)

// Phase is one stretch of a Plan with its own rate and arrival process.
//
// The rate is Rate when set, else Multiplier × the plan's BaselineRPS; set
// exactly one of them, except for replay, which takes neither (its pace
// comes from the trace and Speed).
type Phase struct {
	Name       string        `yaml:"name"`                 // unique within the plan; labels records
	Duration   time.Duration `yaml:"duration"`             // > 0
	Rate       float64       `yaml:"rate,omitempty"`       // absolute rate, arrivals/s
	Multiplier float64       `yaml:"multiplier,omitempty"` // of the plan's baseline, used when Rate == 0
	Arrival    string        `yaml:"arrival,omitempty"`    // constant, poisson, gamma or replay; "" = DefaultArrival
	Burstiness float64       `yaml:"burstiness,omitempty"` // gamma shape (> 0); 1 = Poisson, < 1 burstier
	TraceFile  string        `yaml:"trace,omitempty"`      // replay: CSV or JSONL trace file (see LoadTraces)
	Speed      float64       `yaml:"speed,omitempty"`      // replay: time scale, offsets are divided by it; 0 = 1
	// TraceOffset starts the replay this far into the trace (after
	// rebasing to its first entry); TraceWindow, when > 0, replays only
	// that long a slice of it. Both are trace time, before Speed: offset
	// 1h, window 10m, speed 2 replays the trace's minutes 60–70 in 5
	// minutes, the slice rebased so that its start plays at 0.
	TraceOffset time.Duration `yaml:"trace_offset,omitempty"`
	TraceWindow time.Duration `yaml:"trace_window,omitempty"`
	// TraceBlockTokens is the prompt tokens per hash id of a trace with
	// prompt blocks (Mooncake); 0 = DefaultBlockTokens.
	TraceBlockTokens int `yaml:"trace_block_tokens,omitempty"`
	// Trace is the trace as replayed: LoadTraces reads TraceFile and keeps
	// the TraceOffset/TraceWindow slice of it (Trace.Slice). One set
	// directly is replayed as it is, the slice settings unused: take it
	// through Slice first, which also lays out its prompt blocks.
	Trace *Trace `yaml:"-"`
}

// Plan is a sequence of phases that join without gaps: phase i covers
// [start_i, start_i + Duration_i) since the run's origin.
type Plan struct {
	BaselineRPS float64 `yaml:"baseline_rps"` // the named baseline, arrivals/s; Multiplier refers to it
	Phases      []Phase `yaml:"phases"`
}

// PhaseBounds describes where a phase lies in the run and what it offers.
type PhaseBounds struct {
	Name       string
	Start, End time.Duration // since the run origin; the phase covers [Start, End)
	Arrival    string        // the process, with "" resolved to DefaultArrival
	Rate       float64       // offered arrivals/s (replay: entries in the phase / duration)
	Multiplier float64       // Rate / BaselineRPS; 0 without a baseline
	Expected   float64       // expected arrivals in the phase (exact for constant and replay)
}

// kind returns the phase's process name with the default applied.
func (ph *Phase) kind() string {
	if ph.Arrival == "" {
		return DefaultArrival
	}
	return ph.Arrival
}

// rate returns the effective rate in arrivals/s (0 for replay or when
// unresolvable).
func (ph *Phase) rate(baseline float64) float64 {
	if ph.Rate > 0 {
		return ph.Rate
	}
	return ph.Multiplier * baseline
}

// Validate checks the phase on its own (a multiplier's baseline is checked
// by Plan.Validate). Errors name the phase and the field, e.g.
// `schedule: phase "burst": duration: must be > 0`.
func (ph *Phase) Validate() error {
	return ph.validate(fmt.Sprintf("phase %q", ph.Name), "")
}

// validate checks the phase; label names it in messages, path is its field
// path in the plan ("phases[2]"; "" for a phase on its own).
func (ph *Phase) validate(label, path string) error {
	bad := func(name, format string, args ...any) error {
		return phaseErr(label, path, name, format, args...)
	}
	if ph.Name == "" {
		return bad("name", "required")
	}
	// Speed first: a replay phase's duration is derived from it (FitTrace),
	// so a bad speed shows up as a bad duration otherwise.
	if !finite(ph.Speed) || ph.Speed < 0 {
		return bad("speed", "must be > 0 (or 0 for 1), got %g", ph.Speed)
	}
	if ph.Duration <= 0 {
		return bad("duration", "must be > 0, got %v", ph.Duration)
	}
	if !finite(ph.Rate) || ph.Rate < 0 {
		return bad("rate", "must be a finite number of arrivals/s >= 0, got %g", ph.Rate)
	}
	if ph.Rate > MaxRate {
		return bad("rate", "must be <= %g, got %g", float64(MaxRate), ph.Rate)
	}
	if !finite(ph.Multiplier) || ph.Multiplier < 0 {
		return bad("multiplier", "must be a finite number > 0 (of baseline_rps), got %g", ph.Multiplier)
	}
	if !finite(ph.Burstiness) || ph.Burstiness < 0 {
		return bad("burstiness", "must be > 0, got %g", ph.Burstiness)
	}
	kind := ph.kind()
	switch kind {
	case ArrivalConstant, ArrivalPoisson, ArrivalGamma:
		switch {
		case ph.Rate > 0 && ph.Multiplier > 0:
			return bad("multiplier", "set rate or multiplier, not both")
		case ph.Rate == 0 && ph.Multiplier == 0:
			return bad("rate", "set rate (arrivals/s > 0) or multiplier (> 0, of baseline_rps); with both 0 the phase would send nothing")
		}
		if kind == ArrivalGamma && ph.Burstiness == 0 {
			return bad("burstiness", "must be > 0 for gamma arrivals")
		}
		if kind != ArrivalGamma && ph.Burstiness != 0 {
			return bad("burstiness", "only for gamma arrivals, not %s", kind)
		}
		if ph.Speed != 0 {
			return bad("speed", "only for replay arrivals, not %s", kind)
		}
		if ph.TraceFile != "" || ph.Trace != nil {
			return bad("trace", "only for replay arrivals, not %s", kind)
		}
		for _, f := range []struct {
			name string
			set  bool
		}{{"trace_offset", ph.TraceOffset != 0}, {"trace_window", ph.TraceWindow != 0}, {"trace_block_tokens", ph.TraceBlockTokens != 0}} {
			if f.set {
				return bad(f.name, "only for replay arrivals, not %s", kind)
			}
		}
	case ArrivalReplay:
		if ph.Rate != 0 {
			return bad("rate", "not used by replay arrivals (use speed)")
		}
		if ph.Multiplier != 0 {
			return bad("multiplier", "not used by replay arrivals (use speed)")
		}
		if ph.Burstiness != 0 {
			return bad("burstiness", "only for gamma arrivals, not replay")
		}
		if err := ph.validateSlice(bad); err != nil {
			return err
		}
		switch {
		case ph.Trace == nil && ph.TraceFile == "":
			return bad("trace", "required for replay arrivals")
		case ph.Trace == nil:
			return bad("trace", "%q not loaded (see Plan.LoadTraces)", ph.TraceFile)
		case len(ph.Trace.Entries) == 0:
			return bad("trace", "no entries")
		}
	case ArrivalNone:
		switch {
		case ph.Rate != 0:
			return bad("rate", "not used by a phase without arrivals")
		case ph.Multiplier != 0:
			return bad("multiplier", "not used by a phase without arrivals")
		case ph.Burstiness != 0:
			return bad("burstiness", "only for gamma arrivals, not none")
		case ph.Speed != 0 || ph.TraceFile != "" || ph.Trace != nil:
			return bad("trace", "only for replay arrivals, not none")
		}
	default:
		return bad("arrival", "unknown process %q (want constant, poisson, gamma, replay or none)", ph.Arrival)
	}
	return nil
}

// phaseErr is a problem with one setting of a phase: it reads
// `schedule: phase "burst": duration: …` and unwraps to a *field.Error named
// by the setting's path in the plan (phases[1].duration).
func phaseErr(label, path, name, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	key := name
	if path != "" {
		key = path + "." + name
	}
	return field.WithText(fmt.Sprintf("schedule: %s: %s: %s", label, name, msg), &field.Error{Field: key, Message: msg})
}

// planErr is a problem with a plan-level setting (baseline_rps, phases).
func planErr(name, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	return field.WithText(fmt.Sprintf("schedule: %s: %s", name, msg), &field.Error{Field: name, Message: msg})
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// Validate checks the plan and every phase: names present and unique,
// durations > 0, rates resolvable (a multiplier needs baseline_rps > 0),
// known arrival processes, burstiness > 0 for gamma, traces loaded for
// replay, and a total duration that fits a time.Duration.
func (p *Plan) Validate() error {
	if !finite(p.BaselineRPS) || p.BaselineRPS < 0 {
		return planErr("baseline_rps", "must be a finite number of requests/s >= 0, got %g", p.BaselineRPS)
	}
	if p.BaselineRPS > MaxRate {
		return planErr("baseline_rps", "must be <= %g, got %g", float64(MaxRate), p.BaselineRPS)
	}
	if len(p.Phases) == 0 {
		return planErr("phases", "none")
	}
	seen := make(map[string]bool, len(p.Phases))
	var total time.Duration
	for i := range p.Phases {
		ph := &p.Phases[i]
		label := fmt.Sprintf("phase %q", ph.Name)
		if ph.Name == "" {
			label = fmt.Sprintf("phases[%d]", i)
		}
		path := fmt.Sprintf("phases[%d]", i)
		if err := ph.validate(label, path); err != nil {
			return err
		}
		if seen[ph.Name] {
			return phaseErr(label, path, "name", "duplicate")
		}
		seen[ph.Name] = true
		if k := ph.kind(); k != ArrivalReplay && k != ArrivalNone && ph.Rate == 0 {
			if p.BaselineRPS == 0 {
				return phaseErr(label, path, "multiplier", "needs baseline_rps > 0")
			}
			if r := ph.rate(p.BaselineRPS); r > MaxRate {
				return phaseErr(label, path, "multiplier", "rate %g × %g = %g exceeds %g", ph.Multiplier, p.BaselineRPS, r, float64(MaxRate))
			}
		}
		if total > math.MaxInt64-ph.Duration {
			return phaseErr(label, path, "duration", "plan longer than %v", time.Duration(math.MaxInt64))
		}
		total += ph.Duration
	}
	return nil
}

// Duration is the plan's total length, the sum of its phase durations.
func (p *Plan) Duration() time.Duration {
	var d time.Duration
	for _, ph := range p.Phases {
		d += ph.Duration
	}
	return d
}

// Bounds returns each phase's interval, rate and expected arrival count.
// It assumes a valid plan (see Validate).
func (p *Plan) Bounds() []PhaseBounds {
	out := make([]PhaseBounds, len(p.Phases))
	var start time.Duration
	for i := range p.Phases {
		ph := &p.Phases[i]
		b := PhaseBounds{Name: ph.Name, Start: start, End: start + ph.Duration, Arrival: ph.kind()}
		secs := ph.Duration.Seconds()
		switch b.Arrival {
		case ArrivalReplay:
			b.Expected = float64(replayCount(ph))
			b.Rate = b.Expected / secs
		case ArrivalConstant:
			b.Rate = ph.rate(p.BaselineRPS)
			b.Expected = float64(constantCount(b.Rate, ph.Duration))
		default:
			b.Rate = ph.rate(p.BaselineRPS)
			b.Expected = b.Rate * secs
		}
		if p.BaselineRPS > 0 {
			b.Multiplier = b.Rate / p.BaselineRPS
		}
		out[i] = b
		start = b.End
	}
	return out
}

// constantCount is the number of k ≥ 0 with round(k·10⁹/rate) ns < d: the
// constant process's exact arrival count.
func constantCount(rate float64, d time.Duration) int64 {
	if !(rate > 0) || d <= 0 {
		return 0
	}
	n := int64(math.Ceil(d.Seconds() * rate)) // k < d·rate before rounding
	at := func(k int64) time.Duration { return toDuration(float64(k) * 1e9 / rate) }
	for n > 0 && at(n-1) >= d { // correct the estimate for ns rounding
		n--
	}
	for at(n) < d {
		n++
	}
	return n
}

// replayCount is the number of trace entries whose scaled offset falls
// inside the phase.
func replayCount(ph *Phase) int {
	if ph.Trace == nil {
		return 0
	}
	n := 0
	for _, e := range ph.Trace.Entries {
		if scaleOffset(e.Offset, ph.Speed) >= ph.Duration {
			break // entries are sorted
		}
		n++
	}
	return n
}

// LoadTraces reads the trace of every replay phase that names a TraceFile
// and has no Trace yet, and keeps the slice its TraceOffset and
// TraceWindow select (Trace.Slice, blocks of TraceBlockTokens). Relative
// paths are resolved against dir (the experiment file's directory; ""
// means the working directory). An offset beyond the trace's last entry,
// or a window that holds no entry, is an error naming the setting.
func (p *Plan) LoadTraces(dir string) error {
	for i := range p.Phases {
		ph := &p.Phases[i]
		if ph.TraceFile == "" || ph.Trace != nil {
			continue
		}
		label := fmt.Sprintf("phase %q", ph.Name)
		if ph.Name == "" {
			label = fmt.Sprintf("phases[%d]", i)
		}
		path := fmt.Sprintf("phases[%d]", i)
		bad := func(name, format string, args ...any) error {
			return phaseErr(label, path, name, format, args...)
		}
		if err := ph.validateSlice(bad); err != nil {
			return err
		}
		file := ph.TraceFile
		if dir != "" && !filepath.IsAbs(file) {
			file = filepath.Join(dir, file)
		}
		t, err := ReadTraceFile(file)
		if err != nil {
			return err
		}
		if end := t.last(); ph.TraceOffset > end {
			return bad("trace_offset", "%s is beyond the end of the trace %s (its last arrival is at %s)", ph.TraceOffset, t.Name, end)
		}
		s := t.Slice(ph.TraceOffset, ph.TraceWindow, ph.TraceBlockTokens)
		if len(s.Entries) == 0 {
			return bad("trace_window", "no arrival of the trace %s lies between %s and %s", t.Name, ph.TraceOffset, ph.TraceOffset+ph.TraceWindow)
		}
		ph.Trace = s
	}
	return nil
}

// validateSlice checks the settings that select a slice of the trace.
func (ph *Phase) validateSlice(bad func(name, format string, args ...any) error) error {
	switch {
	case ph.TraceOffset < 0:
		return bad("trace_offset", "must be >= 0, got %s", ph.TraceOffset)
	case ph.TraceWindow < 0:
		return bad("trace_window", "must be >= 0, got %s", ph.TraceWindow)
	case ph.TraceBlockTokens < 0 || ph.TraceBlockTokens > 0 && ph.TraceBlockTokens < MinBlockTokens:
		return bad("trace_block_tokens", "must be >= %d (0 = %d), got %d", MinBlockTokens, DefaultBlockTokens, ph.TraceBlockTokens)
	case ph.TraceBlockTokens > MaxTraceTokens:
		return bad("trace_block_tokens", "must be <= %d, got %d", MaxTraceTokens, ph.TraceBlockTokens)
	}
	return nil
}

// PhaseNameAt is the name of the phase of bounds that holds t: the last
// one whose start is at or before t (so a time past the plan's end belongs
// to its last phase), "" before the first.
func PhaseNameAt(bounds []PhaseBounds, t time.Duration) string {
	name := ""
	for _, b := range bounds {
		if t >= b.Start {
			name = b.Name
		}
	}
	return name
}
