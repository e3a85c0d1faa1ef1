package analyze

import (
	"cmp"
	"errors"
	"fmt"
	"math/big"
	"math/bits"
	"reflect"
	"slices"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/surge-bench/surge/internal/record"
)

// Histogram geometry: microseconds from 1 µs to 1 h, 3 significant digits.
const (
	histLowest  int64 = 1
	histHighest int64 = int64(time.Hour / time.Microsecond)
	histSigFigs       = 3
)

// hist is what both HDR histogram kinds offer and the analysis needs.
type hist interface {
	RecordValue(v int64) error
	TotalCount() int64
	ValueAtPercentilesSlice(percentiles []float64) []int64
}

var (
	_ hist = (*hdr.Histogram)(nil)
	_ hist = (*hdr.PackedHistogram)(nil)
)

func newHist(packed bool) hist {
	if packed {
		return hdr.NewPacked(histLowest, histHighest, histSigFigs)
	}
	return hdr.New(histLowest, histHighest, histSigFigs)
}

// mergeHist adds src's counts to dst; both have the same geometry, so the
// merge is lossless.
func mergeHist(dst, src hist) {
	switch d := dst.(type) {
	case *hdr.Histogram:
		switch s := src.(type) {
		case *hdr.Histogram:
			// Histogram.Merge walks every bucket through an iterator; a
			// sparse copy scans the counts once and adds index to index.
			p := hdr.NewPacked(histLowest, histHighest, histSigFigs)
			p.MergeFrom(s)
			p.MergeInto(d)
		case *hdr.PackedHistogram:
			s.MergeInto(d)
		}
	case *hdr.PackedHistogram:
		switch s := src.(type) {
		case *hdr.PackedHistogram:
			d.Merge(s)
		case *hdr.Histogram:
			d.MergeFrom(s)
		}
	}
}

// Outcome slots: record.Outcomes in order, then one for unknown outcomes.
const (
	slotOK = iota
	slotDrop
	slotRateLimited
	slotHTTPError
	slotTimeout
	slotConnError
	slotStreamError
	slotInvalid
	slotCancelled
	slotUnknown
	numSlots
)

// unknownOutcome is the key unknown outcomes are counted under.
const unknownOutcome = record.Outcome("unknown")

func outcomeSlot(o record.Outcome) int {
	switch o {
	case record.OK:
		return slotOK
	case record.GeneratorDrop:
		return slotDrop
	case record.RateLimited:
		return slotRateLimited
	case record.HTTPError:
		return slotHTTPError
	case record.Timeout:
		return slotTimeout
	case record.ConnError:
		return slotConnError
	case record.StreamError:
		return slotStreamError
	case record.InvalidResponse:
		return slotInvalid
	case record.Cancelled:
		return slotCancelled
	}
	return slotUnknown
}

func slotOutcome(i int) record.Outcome {
	if i == slotUnknown {
		return unknownOutcome
	}
	return record.Outcomes[i]
}

// sample is one record reduced to what the accumulators need; values in µs,
// -1 when absent.
type sample struct {
	slot           int
	sent, good     bool
	smooth         bool // every token by its smooth goodput deadline (smoothGood)
	inFlightCancel bool // cancelled after it was sent: censored like a timeout
	lostDrop       bool // generator_drop of a lost worker, not of the in-flight cap
	tokenless      bool // ok, but the stream carried no token: an empty answer, never good
	us             [numMetrics]int64
	// cens marks a metric whose value is censored: the request timed out
	// (censorTimeout) or was cancelled in flight (censorCancel) before it
	// reached that boundary. A timeout after its first token has a known
	// TTFT; only its completion is censored.
	cens           [numMetrics]int8
	prompt, output int64
	inputs         int64 // embeddings' texts or rerank's documents of an ok request
	reqBytes       int64 // request body bytes of a sent request
	images         int64 // images of a sent request
	decodeNs, gaps int64
	rec            *record.Record // for the client's counts (ClientStats)
	done           int64          // done time of an ok request, ns; 0 otherwise
}

type metricAcc struct {
	h        hist  // nil until the first value
	sum, max int64 // µs, exact
	sumSq    u128  // Σ µs², exact (for the standard deviation)
	// timeouts and cancelled count the requests whose value of this
	// metric is censored: above every recorded value (sample.cens).
	timeouts, cancelled int64
}

// Censoring kinds of a sample's metric.
const (
	censorNone int8 = iota
	censorTimeout
	censorCancel
)

// u128 is an unsigned 128-bit accumulator.
type u128 struct{ hi, lo uint64 }

func (u *u128) add(o u128) {
	var c uint64
	u.lo, c = bits.Add64(u.lo, o.lo, 0)
	u.hi += o.hi + c
}

func (u u128) big() *big.Int {
	b := new(big.Int).SetUint64(u.hi)
	return b.Lsh(b, 64).Or(b, new(big.Int).SetUint64(u.lo))
}

// acc accumulates one group: a phase, a window or the overall aggregate.
type acc struct {
	outcomes       [numSlots]int64
	sent, good     int64
	smooth         int64 // smoothly good (smoothGood)
	prompt, output int64 // tokens of ok requests
	inputs         int64 // texts (documents) of ok embeddings (rerank) requests
	reqBytes       int64 // request body bytes of the sent requests
	images         int64 // images of the sent requests
	decodeNs, gaps int64 // pooled ITL: Σ(done − first token), Σ(chunks − 1) of ok requests
	// completed counts ok requests whose done time falls in the group's
	// interval, whatever their arrival: the target's throughput by
	// completion time. lastDone is the latest done time of the group's own
	// (by arrival) ok requests, ns; 0 when none.
	completed, lastDone int64
	// cancelled counts requests cancelled in flight (outcome cancelled
	// after they were sent): censored in the latency percentiles like
	// timeouts.
	cancelled int64
	// lostDrops counts the generator_drop records of a lost or
	// interrupted worker (record.Cause; not the in-flight cap).
	lostDrops int64
	// tokenless counts the ok requests whose stream carried no token (an
	// empty answer): not good, though neither late nor failed.
	tokenless int64
	m         [numMetrics]metricAcc
	// ruleOK holds the recovery metric's values of the ok requests, in
	// the recovery windows only (Recovery counts the slow ones).
	ruleOK metricAcc
	client clientAcc
	packed bool
}

func (a *acc) observe(s *sample) {
	a.outcomes[s.slot]++
	if s.sent {
		a.sent++
	}
	if s.good {
		a.good++
	}
	if s.smooth {
		a.smooth++
	}
	if s.inFlightCancel {
		a.cancelled++
	}
	if s.lostDrop {
		a.lostDrops++
	}
	if s.tokenless {
		a.tokenless++
	}
	a.prompt += s.prompt
	a.output += s.output
	a.inputs += s.inputs
	a.reqBytes += s.reqBytes
	a.images += s.images
	a.decodeNs += s.decodeNs
	a.gaps += s.gaps
	a.lastDone = max(a.lastDone, s.done)
	for i, v := range s.us {
		if v >= 0 {
			a.m[i].add(v, a.packed)
		}
		switch s.cens[i] {
		case censorTimeout:
			a.m[i].timeouts++
		case censorCancel:
			a.m[i].cancelled++
		}
	}
	if s.rec != nil {
		a.client.observe(s.rec, s.slot == slotOK, a.packed)
	}
}

// add records one value, µs within [0, histHighest].
func (m *metricAcc) add(v int64, packed bool) {
	if m.h == nil {
		m.h = newHist(packed)
	}
	_ = m.h.RecordValue(v) // v is within [0, histHighest]: cannot fail
	m.sum += v
	m.max = max(m.max, v)
	m.sumSq.add(u128{lo: uint64(v) * uint64(v)}) // v ≤ 3.6e9: v² < 2⁶⁴
}

// merge adds src's values to m.
func (m *metricAcc) merge(src *metricAcc, packed bool) {
	m.timeouts += src.timeouts
	m.cancelled += src.cancelled
	if src.h == nil {
		return
	}
	if m.h == nil {
		m.h = newHist(packed)
	}
	mergeHist(m.h, src.h)
	m.sum += src.sum
	m.max = max(m.max, src.max)
	m.sumSq.add(src.sumSq)
}

func (a *acc) merge(b *acc) {
	for i := range a.outcomes {
		a.outcomes[i] += b.outcomes[i]
	}
	a.sent += b.sent
	a.smooth += b.smooth
	a.lostDrops += b.lostDrops
	a.tokenless += b.tokenless
	a.good += b.good
	a.prompt += b.prompt
	a.output += b.output
	a.inputs += b.inputs
	a.reqBytes += b.reqBytes
	a.images += b.images
	a.decodeNs += b.decodeNs
	a.gaps += b.gaps
	a.completed += b.completed
	a.cancelled += b.cancelled
	a.lastDone = max(a.lastDone, b.lastDone)
	for i := range a.m {
		a.m[i].merge(&b.m[i], a.packed)
	}
	a.ruleOK.merge(&b.ruleOK, a.packed)
	a.client.merge(&b.client, a.packed)
}

func (a *acc) offered() int64 {
	var n int64
	for _, c := range a.outcomes {
		n += c
	}
	return n
}

// windowSeries holds the accumulators of arrival-time windows of one width,
// aligned to the phases so that no window straddles a phase boundary.
//
// The grid: every phase start and end but the last end is a boundary b₀ <
// b₁ < … < bₙ. Between two boundaries, windows of the configured width W
// start at the earlier one; the remainder at the end is a window of its own
// when it is at least W/2 long, and otherwise joins the window before it (so
// a window is W/2 to 3W/2 long, or the whole span when that is shorter than
// W). Before b₀ and from bₙ on, windows of exactly W continue the grid
// without end. Window k is numbered so that the one starting at the anchor
// (the burst's end when there is a burst) is 0: windows after the burst are
// k ≥ 0 and cover [anchor + k·W, anchor + (k+1)·W), as the recovery rule
// counts them.
type windowSeries struct {
	width  int64
	anchor int64
	starts []int64 // window starts in [b₀, bₙ), ascending
	last   int64   // bₙ
	k0     int64   // ordinal of the window starting at the anchor
	accs   map[int64]*acc
	lastK  int64
	lastA  *acc
}

// newWindowSeries builds the grid for phases given as boundaries
// (unsorted, duplicates allowed, at least one) and an anchor among them.
func newWindowSeries(width, anchor int64, bounds []int64) *windowSeries {
	b := slices.Clone(bounds)
	slices.Sort(b)
	b = slices.Compact(b)
	w := &windowSeries{width: width, anchor: anchor, last: b[len(b)-1], accs: map[int64]*acc{}}
	for i := 0; i+1 < len(b); i++ {
		s, e := b[i], b[i+1]
		n := (e - s) / width
		if n == 0 || e-s-n*width >= width/2 {
			n++
		}
		for j := range n {
			w.starts = append(w.starts, s+j*width)
		}
	}
	w.k0 = w.ordinal(anchor)
	return w
}

// ordinal numbers the windows from the first at or after b₀ (0).
func (w *windowSeries) ordinal(t int64) int64 {
	n := int64(len(w.starts))
	switch {
	case t >= w.last:
		return n + floorDiv(t-w.last, w.width)
	case n == 0 || t < w.starts[0]:
		return floorDiv(t-w.first(), w.width)
	}
	i, found := slices.BinarySearch(w.starts, t)
	if !found {
		i--
	}
	return int64(i)
}

func (w *windowSeries) first() int64 {
	if len(w.starts) > 0 {
		return w.starts[0]
	}
	return w.last
}

func (w *windowSeries) index(t int64) int64 { return w.ordinal(t) - w.k0 }

// bounds returns window k's [start, end).
func (w *windowSeries) bounds(k int64) (start, end int64) {
	g, n := k+w.k0, int64(len(w.starts))
	switch {
	case g < 0:
		return w.first() + g*w.width, w.first() + (g+1)*w.width
	case g >= n:
		s := w.last + (g-n)*w.width
		return s, s + w.width
	case g+1 < n:
		return w.starts[g], w.starts[g+1]
	}
	return w.starts[g], w.last
}

func (w *windowSeries) get(k int64) *acc {
	if w.lastA != nil && k == w.lastK {
		return w.lastA
	}
	a := w.accs[k]
	if a == nil {
		a = &acc{packed: true}
		w.accs[k] = a
	}
	w.lastK, w.lastA = k, a
	return a
}

func (w *windowSeries) merge(b *windowSeries) {
	for k, src := range b.accs {
		w.get(k).merge(src)
	}
}

// Analyzer accumulates records into per-phase, per-window and timeline
// statistics. Create it with New, feed it with Add, read it with Result.
// It is not safe for concurrent use.
type Analyzer struct {
	cfg      Config // with defaults
	byStart  []int  // indexes of cfg.Phases sorted by start
	phases   []*acc // indexed like cfg.Phases
	runStart int64  // first phase start, ns
	runEnd   int64  // last phase end, ns
	burst    int    // index of the burst phase, -1 if none
	// ruleMetric is the recovery rule's metric (an index into Metrics).
	ruleMetric int
	baseline   int // index of the baseline phase, -1 if none
	windows    *windowSeries
	recov      *windowSeries // recovery windows; == windows unless Recovery.Window differs
	timeline   *timeline
	anom       Anomalies
	profiles   profileSet   // the measured records by profile label
	byPhase    []profileSet // each phase's records by profile label, indexed like cfg.Phases
	// label is the one profile label seen while split is false: until a
	// second label appears the profiles' accumulators would repeat the
	// phases' (at twice their cost per record), so only their token
	// counts are kept, and splitProfiles copies the phases' accumulators
	// into the label's when the second one comes.
	label           string
	labelled, split bool
}

// New returns an Analyzer for cfg, or the configuration's errors.
func New(cfg Config) (*Analyzer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	a := &Analyzer{cfg: cfg, burst: -1, baseline: -1, profiles: profileSet{}, ruleMetric: metricIndex(cfg.Recovery.Metric)}
	a.runStart, a.runEnd = int64(cfg.Phases[0].Start), int64(cfg.Phases[0].End)
	for i, p := range cfg.Phases {
		a.byStart = append(a.byStart, i)
		a.phases = append(a.phases, &acc{})
		a.byPhase = append(a.byPhase, profileSet{})
		a.runStart = min(a.runStart, int64(p.Start))
		a.runEnd = max(a.runEnd, int64(p.End))
		if p.Name == cfg.BurstPhase {
			a.burst = i
		}
		if p.Name == cfg.BaselinePhase {
			a.baseline = i
		}
	}
	slices.SortFunc(a.byStart, func(i, j int) int { return cmp.Compare(cfg.Phases[i].Start, cfg.Phases[j].Start) })
	anchor := a.runStart
	var bounds []int64
	if a.burst >= 0 {
		anchor = int64(cfg.Phases[a.burst].End)
		bounds = append(bounds, anchor)
	}
	for _, p := range cfg.Phases {
		bounds = append(bounds, int64(p.Start))
		if int64(p.End) < a.runEnd {
			bounds = append(bounds, int64(p.End))
		}
	}
	a.windows = newWindowSeries(int64(cfg.Window), anchor, bounds)
	a.recov = a.windows
	if cfg.Recovery.Window != cfg.Window {
		a.recov = newWindowSeries(int64(cfg.Recovery.Window), anchor, bounds)
	}
	a.timeline = newTimeline(int64(cfg.SampleEvery), a.runEnd+int64(max(cfg.Timeout, timelineTail)))
	return a, nil
}

// Config returns the analyzer's configuration with defaults filled in.
func (a *Analyzer) Config() Config {
	c := a.cfg
	c.Phases = slices.Clone(c.Phases)
	return c
}

// phaseOf returns the index in cfg.Phases of the phase containing t, or -1.
func (a *Analyzer) phaseOf(t int64) int {
	for _, i := range a.byStart {
		p := &a.cfg.Phases[i]
		if t < int64(p.Start) {
			return -1
		}
		if t < int64(p.End) {
			return i
		}
	}
	return -1
}

// us converts a duration in ns to µs within the histogram range, counting
// values it has to clamp.
func (a *Analyzer) us(ns int64) int64 {
	if ns < 0 {
		a.anom.NegativeDurations++
		return 0
	}
	v := ns / 1000
	if v > histHighest {
		a.anom.OverRange++
		return histHighest
	}
	return v
}

// Add accounts one record to the phase and window of its scheduled arrival
// and to the timeline. It does not keep rec.
func (a *Analyzer) Add(rec *record.Record) {
	s := a.sampleOf(rec)
	sched, done := rec.ScheduledNs, rec.DoneNs
	if pi := a.phaseOf(sched); pi >= 0 {
		if !a.split { // before this record reaches its phase (splitProfiles)
			if !a.labelled {
				a.label, a.labelled = rec.Profile, true
			}
			if rec.Profile != a.label {
				a.splitProfiles()
			}
		}
		a.phases[pi].observe(&s)
		a.byPhase[pi].observe(rec.Profile, &s, a.split)
		if !a.cfg.Phases[pi].Excluded {
			a.profiles.observe(rec.Profile, &s, a.split)
		}
		if rec.Phase != "" && rec.Phase != a.cfg.Phases[pi].Name {
			a.anom.PhaseLabelMismatch++
		}
	} else {
		a.anom.Unassigned++
	}
	w := a.windows.get(a.windows.index(sched))
	w.observe(&s)
	if a.recov != a.windows {
		w = a.recov.get(a.recov.index(sched))
		w.observe(&s)
	}
	if v := s.us[a.ruleMetric]; s.slot == slotOK && v >= 0 {
		w.ruleOK.add(v, true)
	}
	if s.slot == slotOK && done != record.None {
		a.countCompletion(done)
		a.countProfileCompletion(rec.Profile, done)
	}
	a.anom.TimelineClipped += a.timeline.add(rec)
}

// sampleOf turns one record into the values the accumulators observe,
// judged with the analyzer's deadlines.
func (a *Analyzer) sampleOf(rec *record.Record) sample {
	const none = record.None
	var s sample
	for i := range s.us {
		s.us[i] = -1
	}
	s.slot = outcomeSlot(rec.Outcome)
	if s.slot == slotUnknown {
		a.anom.UnknownOutcome++
	}
	s.good = Judge(rec, a.cfg.Deadlines)
	s.smooth = smoothGood(rec, a.cfg.Deadlines)
	if s.good != rec.Good {
		a.anom.GoodFlagMismatch++
	}
	sched, sent, conn, first, done := rec.ScheduledNs, rec.SentNs, rec.ConnNs, rec.FirstTokenNs, rec.DoneNs
	// An arrival without a record (a killed run's, record.CauseUnrecorded)
	// was due before the run ended: it counts as sent, at a time unknown,
	// and is not censored in the latencies — nothing is known of it.
	s.sent = sent != none || rec.Cause == record.CauseUnrecorded
	if sent != none {
		s.reqBytes, s.images = int64(rec.RequestBytes), int64(rec.Images)
	}
	s.inFlightCancel = s.slot == slotCancelled && sent != none
	s.lostDrop = s.slot == slotDrop && rec.Cause.Worker()
	if sent != none {
		s.us[mLag] = a.us(sent - sched)
		if conn != none {
			s.us[mConnWait] = a.us(conn - sent)
		}
	}
	if conn != none && rec.HeadersNs != none {
		s.us[mConnToHeaders] = a.us(rec.HeadersNs - conn)
	}
	if rec.GatewayNs != none {
		s.us[mGatewayWait] = a.us(rec.GatewayNs)
	}
	if rec.UpstreamNs != none {
		s.us[mUpstream] = a.us(rec.UpstreamNs)
	}
	if s.slot == slotOK {
		s.prompt, s.output, s.inputs = int64(rec.PromptTokens), int64(rec.OutputTokens), int64(rec.Inputs)
		s.tokenless = first == none
		if first != none {
			s.us[mTTFTSchedule] = a.us(first - sched)
			if s.sent {
				s.us[mTTFTSend] = a.us(first - sent)
			}
		}
		if done != none {
			s.done = done
			s.us[mE2ESchedule] = a.us(done - sched)
			if s.sent {
				s.us[mE2ESend] = a.us(done - sent)
			}
		}
		if rec.TPOTNs != none {
			s.us[mTPOT] = a.us(rec.TPOTNs)
		}
		if rec.ITLMaxNs != none {
			s.us[mITLMax] = a.us(rec.ITLMaxNs)
		}
		if rec.FirstTextNs != none {
			s.us[mTTFTTextSched] = a.us(rec.FirstTextNs - sched)
			if s.sent {
				s.us[mTTFTTextSend] = a.us(rec.FirstTextNs - sent)
			}
		}
		if first != none && done >= first && rec.Chunks >= 2 {
			s.decodeNs, s.gaps = done-first, int64(rec.Chunks-1)
		}
	}
	if kind := censorKind(s.slot, s.inFlightCancel); kind != censorNone {
		// Completion is unknown; a first token (or text) that came
		// before the end is known, and counts like any other.
		s.cens[mE2ESchedule], s.cens[mE2ESend] = kind, kind
		if first != none {
			s.us[mTTFTSchedule] = a.us(first - sched)
			if s.sent {
				s.us[mTTFTSend] = a.us(first - sent)
			}
		} else {
			s.cens[mTTFTSchedule], s.cens[mTTFTSend] = kind, kind
		}
		if rec.FirstTextNs != none {
			s.us[mTTFTTextSched] = a.us(rec.FirstTextNs - sched)
			if s.sent {
				s.us[mTTFTTextSend] = a.us(rec.FirstTextNs - sent)
			}
		} else {
			s.cens[mTTFTTextSched], s.cens[mTTFTTextSend] = kind, kind
		}
	}
	s.rec = rec
	return s
}

// censorKind says whether a request of this outcome is censored in the
// latency distributions: a timeout, or a request cancelled in flight.
func censorKind(slot int, inFlightCancel bool) int8 {
	switch {
	case slot == slotTimeout:
		return censorTimeout
	case inFlightCancel:
		return censorCancel
	}
	return censorNone
}

// countCompletion counts an ok request that ended at done (ns) in the phase
// and the windows its done time falls in: completions by completion time.
// Completions outside the run's span [first phase start, last phase end)
// are not counted in any window, so that they add no window of their own.
func (a *Analyzer) countCompletion(done int64) {
	if pi := a.phaseOf(done); pi >= 0 {
		a.phases[pi].completed++
	}
	if done < a.runStart || done >= a.runEnd {
		return
	}
	a.windows.get(a.windows.index(done)).completed++
	if a.recov != a.windows {
		a.recov.get(a.recov.index(done)).completed++
	}
}

// errConfigMismatch is returned by Merge when the two analyzers were not
// built from the same configuration.
var errConfigMismatch = errors.New("analyze: merge: configurations differ")

// Merge adds everything b has accumulated to a, losslessly: the result is
// what a single Analyzer fed with both record streams would hold. Both must
// have the same configuration; b is not modified.
func (a *Analyzer) Merge(b *Analyzer) error {
	if a == b {
		return fmt.Errorf("analyze: merge: an analyzer cannot be merged into itself")
	}
	if !reflect.DeepEqual(a.cfg, b.cfg) {
		return errConfigMismatch
	}
	// Split both before their phases merge when their profiles differ
	// or either is split already; a takes b's one label otherwise.
	if a.split || b.split || a.labelled && b.labelled && a.label != b.label {
		a.splitProfiles()
		b.splitProfiles()
	} else if !a.labelled {
		a.label, a.labelled = b.label, b.labelled
	}
	for i := range a.phases {
		a.phases[i].merge(b.phases[i])
	}
	a.windows.merge(b.windows)
	if a.recov != a.windows {
		a.recov.merge(b.recov)
	}
	a.timeline.merge(b.timeline)
	a.anom.add(b.anom)
	a.profiles.merge(b.profiles)
	for i := range a.byPhase {
		a.byPhase[i].merge(b.byPhase[i])
	}
	return nil
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func ceilDiv(a, b int64) int64 { return -floorDiv(-a, b) }
