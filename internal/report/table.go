package report

import (
	"cmp"
	"math"
	"slices"
	"strconv"

	"github.com/surge-bench/surge/internal/record"
)

// Table is a results table (docs/method.md §13) with the context needed to read it.
type Table struct {
	Title    string    // heading, e.g. "surge burst: llama-3-8b on vllm"
	Meta     []KV      // shown above the rows: named baseline, deadlines, SLOs, tool version…
	Rows     []Row     // one per model × workload × deployment × multiplier (× phase, kept in the given order); rendered sorted
	Verdicts []Verdict // SLO verdicts, shown below the rows in the given order
	Notes    []string  // free-form notes shown below the verdicts
	// Diagnoses say, per run, how the target held or failed (shown after
	// the verdicts).
	Diagnoses []Diagnosis
	// PhaseHead names the phase column for people: "phase" when empty;
	// "step" or "level" where the rows are a capacity search's steps or a
	// sweep's levels. CSV and JSON always call it phase.
	PhaseHead string
	// Spreads are the spread lines of repeated runs (repeat.go), one per
	// configuration and metric, shown below the rows; none without
	// repeats.
	Spreads []Spread
	// Omit lists column keys the Markdown and HTML layouts leave out
	// because they do not apply — a run or a capacity step has no burst, so
	// BurstColumns are not its columns. CSV and JSON keep every column (as
	// n/a with its reason), so that their schema never depends on the
	// experiment.
	Omit []string
	// Partial says why the run was cut short, and what became of its
	// plan's arrivals; nil for a run that completed (or several runs).
	Partial *Partial
}

// Partial is results.json's "partial": why the run was cut short, as a
// value (record.PartialCause) and in words, and the accounting of its
// plan's arrivals where it is known.
type Partial struct {
	Cause    record.PartialCause `json:"cause"`
	Why      string              `json:"why"`
	Arrivals *record.Arrivals    `json:"arrivals,omitempty"`
}

// BurstColumns are the columns only a burst experiment fills: the
// multiplier, the baseline and burst rates, the recovery measured and
// predicted.
var BurstColumns = []string{"multiplier", "baseline_rps", "burst_rps", "recovery_s", "predicted_recovery_s", "recovery_late", "mu_rps", "mu_source"}

// cols is the table's columns for people: every column but those it
// omits, and but the columns that would say nothing in any row — the TTFT
// (answer text) columns where no request thought first, the attempts
// columns where nothing was retried, the per-request engine queue where no
// request has one.
func (t *Table) cols() []rowColumn {
	omit := t.Omit
	if !t.any(func(r *Row) bool { v, c := r.TTFTText.P50.state(); return v || c }) {
		omit = append(slices.Clip(omit), TTFTTextColumns...)
	}
	if !t.any(func(r *Row) bool { v, _ := r.AttemptsPerArrival.state(); return v && r.AttemptsPerArrival.V > 1 }) {
		omit = append(slices.Clip(omit), AttemptColumns...)
	}
	if !t.any(func(r *Row) bool { v, c := r.EngineQueue.P50.state(); return v || c }) {
		omit = append(slices.Clip(omit), EngineQueueColumns...)
	}
	if !t.any(func(r *Row) bool { v, c := r.ConnWait.P50.state(); return v || c }) {
		omit = append(slices.Clip(omit), ConnWaitColumns...)
	}
	if !t.any(func(r *Row) bool { v, c := r.GatewayWait.P50.state(); return v || c }) {
		omit = append(slices.Clip(omit), GatewayColumns...)
	}
	if !t.any(func(r *Row) bool { v, c := r.Upstream.P50.state(); return v || c }) {
		omit = append(slices.Clip(omit), UpstreamColumns...)
	}
	if !t.any(func(r *Row) bool { return r.Phase != "" }) {
		omit = append(slices.Clip(omit), "phase") // rows are whole runs
	}
	all := columns
	if t.repeated() { // the rep column goes with the identity columns, before the multiplier
		all = slices.Insert(slices.Clone(columns), slices.IndexFunc(columns, func(c rowColumn) bool { return c.Key == "multiplier" }), repColumn)
	}
	if len(omit) == 0 && t.PhaseHead == "" {
		return all
	}
	var out []rowColumn
	for _, c := range all {
		if slices.Contains(omit, c.Key) {
			continue
		}
		if c.Key == "phase" && t.PhaseHead != "" {
			c.Head = t.PhaseHead
		}
		out = append(out, c)
	}
	return out
}

// TTFTTextColumns, AttemptColumns, EngineQueueColumns and ConnWaitColumns are shown to people only where they
// differ from what the other columns say (CSV and JSON always have them).
var (
	TTFTTextColumns = []string{"ttft_text_p50_ms", "ttft_text_p95_ms", "ttft_text_p99_ms"}
	AttemptColumns  = []string{"attempts_per_arrival", "attempts_rps"}
	// EngineQueueColumns hold the per-request engine queue (OTLP spans,
	// TGI's headers), n/a in every row of a run without them.
	EngineQueueColumns = []string{"engine_queue_p50_ms", "engine_queue_p95_ms", "engine_queue_p99_ms"}
	// ConnWaitColumns are n/a in every row of a virtual-time run, which
	// has no connections.
	ConnWaitColumns = []string{"conn_wait_p50_ms", "conn_wait_p95_ms", "conn_wait_p99_ms"}
	// GatewayColumns and UpstreamColumns hold what a gateway announced
	// (--gateway-timing), n/a in every row of a run without one.
	GatewayColumns  = []string{"gateway_wait_p50_ms", "gateway_wait_p95_ms", "gateway_wait_p99_ms"}
	UpstreamColumns = []string{"upstream_p50_ms", "upstream_p95_ms", "upstream_p99_ms"}
)

func (t *Table) any(f func(*Row) bool) bool {
	for i := range t.Rows {
		if f(&t.Rows[i]) {
			return true
		}
	}
	return false
}

// KV is one labelled value of metadata. An empty Value prints as n/a in
// Markdown and HTML.
type KV struct {
	Key   string `json:"key"`
	Value string `json:"value"`
	// Data is Value in numbers, where a consumer needs them (e.g. the
	// spend and the budget, as *record.Spent and *record.Budget); a
	// pointer or nil, so that KVs stay comparable.
	Data any `json:"data,omitempty"`
}

// Row is one line of the results table: one model × workload × deployment ×
// multiplier. Rates are requests per second, latencies milliseconds, and
// failure rates fractions of the scheduled arrivals in [0, 1]. Any Opt left
// at its zero value is unavailable and prints as n/a.
type Row struct {
	Model    string // model id/version; empty prints as n/a
	Workload string // workload profile, e.g. chat, rag, longgen
	// Phase is the measured phase the row covers, in plan order ("base",
	// "spike", or "overall" for a run's phases together; a capacity step,
	// a sweep level); empty when the row is a whole run.
	Phase      string
	Deployment string // deployment name or type
	Multiplier Opt    // burst multiplier k (burst rate = k × baseline)

	BaselineRPS Opt // the named baseline's arrival rate
	BurstRPS    Opt // the burst's absolute arrival rate
	OfferedRPS  Opt // what the schedule intended
	SentRPS     Opt // what left the generator
	// CompletedRPS is complete, valid responses by completion time: ok
	// requests whose done time falls in the row's interval / its length —
	// what the target completed, never more. ArrivalsOK is the share of the
	// row's arrivals that succeeded, in [0, 1].
	CompletedRPS Opt
	ArrivalsOK   Opt
	GoodputRPS   Opt // successful responses within the per-request deadline, by scheduled arrival

	AttemptsPerArrival Opt // HTTP attempts (retries included) / scheduled arrivals
	AttemptsRPS        Opt // HTTP attempts sent per second: the load the target received

	TTFT       Percentiles // time to first token of any kind (text, reasoning, tool call), ms
	TTFTText   Percentiles // time to first answer-text token, ms; n/a where no request thought first
	Completion Percentiles // time to the end of the response, ms
	QueueWait  Percentiles // engine queue wait from the engine's histogram deltas over the phase, ms
	// EngineQueue is the engine's queue wait per request (OTLP spans,
	// llama.cpp timings, TGI headers) over the phase's arrivals, ms.
	EngineQueue Percentiles
	ConnWait    Percentiles // connection wait: connection acquired − sent, the client's own pool queue, ms
	GatewayWait Percentiles // the gateway's own wait, as it announced it (--gateway-timing), ms
	Upstream    Percentiles // the upstream's time to its headers, as the gateway announced it, ms

	RejectionRate Opt // HTTP 429 / scheduled arrivals
	TimeoutRate   Opt // timeouts / scheduled arrivals
	ErrorRate     Opt // other failures (HTTP, connection, stream, invalid) / scheduled arrivals
	DropRate      Opt // generator drops (in-flight cap reached) / scheduled arrivals

	Recovery          Recovery // measured: seconds after the burst ended
	PredictedRecovery Recovery // the backlog model's prediction, seconds after the burst ended
	// RecoveryLate says the measured recovery came clearly later than
	// predicted (later than predicted × 1.25 + one window, or not within
	// that long); nil when either is unknown or the model predicts none.
	RecoveryLate *bool
	Mu           Opt    // the capacity μ the prediction used, req/s
	MuSource     string // where μ came from (--capacity-rps, the simulator, measured from a backlog), or why it is unknown

	// SLO is the verdict of each SLO clause over the row's phase, by
	// clause name (SLOClauses); a clause not checked, or a row without a
	// verdict, is N/A.
	SLO map[string]VerdictStatus

	Samples       int64  // requests counted in the row
	Partial       bool   // the run was cut short (interrupted, budget, error)
	PartialReason string // why the run is partial

	// Rep is the row's run among Repeats repeated runs of one
	// configuration (1..Repeats); Pooled marks the row of their raw
	// observations merged (Rep 0). Repeats is 0 on a row that was not
	// repeated (repeat.go).
	Rep     int
	Pooled  bool
	Repeats int
}

// Percentiles holds P50, P95 and P99 of one latency, in milliseconds.
type Percentiles struct {
	P50, P95, P99 Opt
}

// PercentilesNA returns P50, P95 and P99 all unavailable for the reason.
func PercentilesNA(reason string) Percentiles {
	na := Unavailable(reason)
	return Percentiles{P50: na, P95: na, P99: na}
}

// GoodputRatio returns goodput RPS / offered RPS (a fraction), or n/a when either is
// unavailable or nothing was offered.
func (r *Row) GoodputRatio() Opt {
	g, o := r.GoodputRPS, r.OfferedRPS
	gv, _ := g.state()
	ov, _ := o.state()
	switch {
	case !gv:
		return Unavailable("goodput unavailable")
	case !ov:
		return Unavailable("offered rate unavailable")
	case o.V <= 0:
		return Unavailable("nothing offered")
	}
	return Val(g.V / o.V)
}

// SLOClauses are the names of the SLO clauses (analyze's clause names),
// in the order of their slo_<name> columns in CSV and JSON.
var SLOClauses = []string{"ttft_p95", "e2e_p99", "goodput_ratio"}

// VerdictStatus is the outcome of one SLO check.
type VerdictStatus int

// The verdict statuses; the zero value means the check could not be decided.
const (
	VerdictUnknown      VerdictStatus = iota // not decided: data missing
	VerdictPass                              // the SLO held
	VerdictFail                              // the SLO failed
	VerdictPartial                           // held over what ran, but the run was cut short (Ctrl-C, a budget): never PASS
	VerdictInconclusive                      // the sample cannot decide it (too few requests, an interval across the limit)
)

// String returns "PASS", "FAIL", "PARTIAL", "INCONCLUSIVE" or "N/A".
func (s VerdictStatus) String() string {
	switch s {
	case VerdictInconclusive:
		return "INCONCLUSIVE"
	case VerdictPartial:
		return "PARTIAL"
	case VerdictPass:
		return "PASS"
	case VerdictFail:
		return "FAIL"
	}
	return "N/A"
}

// MarshalText encodes the status as its String.
func (s VerdictStatus) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Verdict is the result of one SLO check on one row or on the whole table.
type Verdict struct {
	Scope  string        `json:"scope"`  // what was checked, e.g. "5×" or "all runs"
	Check  string        `json:"check"`  // the SLO, e.g. "p95 TTFT <= 2s"
	Status VerdictStatus `json:"status"` // PASS, FAIL, INCONCLUSIVE, PARTIAL or N/A
	Detail string        `json:"detail"` // the observed value, e.g. "observed 3.4s"
}

// rowColumn is one column of the results table: its Column and how a
// Row fills it, shared by every renderer so that their column order and
// names cannot drift apart.
type rowColumn struct {
	Column
	get func(*Row) Cell
}

// The groups of columns; Markdown prints one sub-table per group after the
// identity columns.
const (
	groupID       = ""
	groupLoad     = "Load (requests/s)"
	groupLatency  = "Latency (ms)"
	groupFailures = "Failures and recovery"
)

var columns = []rowColumn{
	textCol("model", "model", "", func(r *Row) string { return r.Model }),
	textCol("workload", "workload", "", func(r *Row) string { return r.Workload }),
	textCol("phase", "phase", "", func(r *Row) string { return r.Phase }),
	textCol("deployment", "deployment", "", func(r *Row) string { return r.Deployment }),
	optCol("multiplier", "k×", groupID, KindMult, "burst rate = k × baseline rate", func(r *Row) Opt { return r.Multiplier }),

	optCol("baseline_rps", "base", groupLoad, KindRPS, "the named baseline's arrival rate", func(r *Row) Opt { return r.BaselineRPS }),
	optCol("burst_rps", "burst", groupLoad, KindRPS, "the burst's absolute arrival rate", func(r *Row) Opt { return r.BurstRPS }),
	optCol("offered_rps", "offered", groupLoad, KindRPS, "what the schedule intended", func(r *Row) Opt { return r.OfferedRPS }),
	optCol("sent_rps", "sent", groupLoad, KindRPS, "what actually left the generator", func(r *Row) Opt { return r.SentRPS }),
	optCol("completed_rps", "completed/s", groupLoad, KindRPS, "complete, valid responses whose completion fell in the phase / its length: what the target completed", func(r *Row) Opt { return r.CompletedRPS }),
	optCol("arrivals_ok_ratio", "arrivals ok %", groupLoad, KindRatio, "share of the phase's scheduled arrivals that completed successfully, whenever they completed", func(r *Row) Opt { return r.ArrivalsOK }),
	optCol("goodput_rps", "goodput", groupLoad, KindRPS, "arrivals of the phase that met the per-request deadline / its length", func(r *Row) Opt { return r.GoodputRPS }),
	optCol("goodput_ratio", "goodput %", groupLoad, KindRatio, "100 × goodput / offered", func(r *Row) Opt { return r.GoodputRatio() }),
	optCol("attempts_per_arrival", "attempts/arrival", groupLoad, KindNumber, "HTTP attempts per scheduled arrival: above 1, retries multiplied the load", func(r *Row) Opt { return r.AttemptsPerArrival }),
	optCol("attempts_rps", "attempts/s", groupLoad, KindRPS, "HTTP attempts sent per second, retries included: the load the target received", func(r *Row) Opt { return r.AttemptsRPS }),

	optCol("ttft_p50_ms", "TTFT p50", groupLatency, KindMs, "time to first content token", func(r *Row) Opt { return r.TTFT.P50 }),
	optCol("ttft_p95_ms", "TTFT p95", groupLatency, KindMs, "", func(r *Row) Opt { return r.TTFT.P95 }),
	optCol("ttft_p99_ms", "TTFT p99", groupLatency, KindMs, "", func(r *Row) Opt { return r.TTFT.P99 }),
	optCol("ttft_text_p50_ms", "TTFT text p50", groupLatency, KindMs, "TTFT (answer text): time to the first answer-text token; n/a where no request thought first (reasoning or a tool call before text)", func(r *Row) Opt { return r.TTFTText.P50 }),
	optCol("ttft_text_p95_ms", "TTFT text p95", groupLatency, KindMs, "", func(r *Row) Opt { return r.TTFTText.P95 }),
	optCol("ttft_text_p99_ms", "TTFT text p99", groupLatency, KindMs, "", func(r *Row) Opt { return r.TTFTText.P99 }),
	optCol("completion_p50_ms", "compl p50", groupLatency, KindMs, "time to the end of the response", func(r *Row) Opt { return r.Completion.P50 }),
	optCol("completion_p95_ms", "compl p95", groupLatency, KindMs, "", func(r *Row) Opt { return r.Completion.P95 }),
	optCol("completion_p99_ms", "compl p99", groupLatency, KindMs, "", func(r *Row) Opt { return r.Completion.P99 }),
	optCol("queue_wait_p50_ms", "queue p50", groupLatency, KindMs, "engine queue wait, histogram delta: the engine's queue-time histogram over the phase, by observation time (n/a without engine telemetry)", func(r *Row) Opt { return r.QueueWait.P50 }),
	optCol("queue_wait_p95_ms", "queue p95", groupLatency, KindMs, "", func(r *Row) Opt { return r.QueueWait.P95 }),
	optCol("queue_wait_p99_ms", "queue p99", groupLatency, KindMs, "", func(r *Row) Opt { return r.QueueWait.P99 }),
	optCol("engine_queue_p50_ms", "queue/req p50", groupLatency, KindMs, "engine queue wait per request (OTLP spans or the engine's response), over the phase's arrivals", func(r *Row) Opt { return r.EngineQueue.P50 }),
	optCol("engine_queue_p95_ms", "queue/req p95", groupLatency, KindMs, "", func(r *Row) Opt { return r.EngineQueue.P95 }),
	optCol("engine_queue_p99_ms", "queue/req p99", groupLatency, KindMs, "", func(r *Row) Opt { return r.EngineQueue.P99 }),

	optCol("conn_wait_p50_ms", "conn wait p50", groupLatency, KindMs, "connection wait: connection acquired − sent, the client's own queue: opening a connection, or every one of its --max-in-flight connections busy", func(r *Row) Opt { return r.ConnWait.P50 }),
	optCol("conn_wait_p95_ms", "conn wait p95", groupLatency, KindMs, "", func(r *Row) Opt { return r.ConnWait.P95 }),
	optCol("conn_wait_p99_ms", "conn wait p99", groupLatency, KindMs, "", func(r *Row) Opt { return r.ConnWait.P99 }),
	optCol("gateway_wait_p50_ms", "gateway p50", groupLatency, KindMs, "the gateway's own wait (its queue, rate limiter, routing) as its headers announce it (--gateway-timing)", func(r *Row) Opt { return r.GatewayWait.P50 }),
	optCol("gateway_wait_p95_ms", "gateway p95", groupLatency, KindMs, "", func(r *Row) Opt { return r.GatewayWait.P95 }),
	optCol("gateway_wait_p99_ms", "gateway p99", groupLatency, KindMs, "", func(r *Row) Opt { return r.GatewayWait.P99 }),
	optCol("upstream_p50_ms", "upstream p50", groupLatency, KindMs, "the upstream's time to its response headers, as the gateway announces it", func(r *Row) Opt { return r.Upstream.P50 }),
	optCol("upstream_p95_ms", "upstream p95", groupLatency, KindMs, "", func(r *Row) Opt { return r.Upstream.P95 }),
	optCol("upstream_p99_ms", "upstream p99", groupLatency, KindMs, "", func(r *Row) Opt { return r.Upstream.P99 }),

	optCol("rejection_rate", "429 %", groupFailures, KindRatio, "rejected with HTTP 429, % of scheduled arrivals", func(r *Row) Opt { return r.RejectionRate }),
	optCol("timeout_rate", "timeout %", groupFailures, KindRatio, "timed out (still in every denominator)", func(r *Row) Opt { return r.TimeoutRate }),
	optCol("error_rate", "error %", groupFailures, KindRatio, "other failures: HTTP, connection, stream, invalid response", func(r *Row) Opt { return r.ErrorRate }),
	optCol("drop_rate", "drop %", groupFailures, KindRatio, "dropped by the generator at its in-flight cap, never sent", func(r *Row) Opt { return r.DropRate }),
	recoveryCol("recovery_s", "recovery", "seconds after the burst until P99 is back within 10% of the pre-burst P99 for 3 windows", func(r *Row) Recovery { return r.Recovery }),
	recoveryCol("predicted_recovery_s", "predicted", "backlog model: backlog / (capacity − baseline rate); never when baseline ≥ capacity", func(r *Row) Recovery { return r.PredictedRecovery }),
	{Column{Key: "recovery_late", Head: "late", Group: groupFailures, Kind: KindText, Desc: "yes: recovery came later than predicted × 1.25 + one window (the fluid model is an optimistic bound)"}, func(r *Row) Cell {
		switch {
		case r.RecoveryLate == nil:
			return fixedCell(formatted{text: NA, raw: NA, json: nil, na: true, reason: "measured or predicted recovery unknown"})
		case *r.RecoveryLate:
			return fixedCell(formatted{text: "yes", raw: "true", json: true})
		}
		return fixedCell(formatted{text: "no", raw: "false", json: false})
	}},
	optCol("mu_rps", "μ", groupFailures, KindRPS, "the capacity the prediction used, req/s; its source in the μ source column", func(r *Row) Opt { return r.Mu }),
	{Column{Key: "mu_source", Head: "μ source", Group: groupFailures, Kind: KindText, Desc: "--capacity-rps, the simulator, or measured from the burst's backlog"}, func(r *Row) Cell {
		if r.MuSource == "" {
			return fixedCell(formatted{text: NA, raw: NA, json: nil, na: true, reason: "not recorded"})
		}
		return fixedCell(formatted{text: r.MuSource, raw: r.MuSource, json: r.MuSource})
	}},
	sloCol("ttft_p95"), sloCol("e2e_p99"), sloCol("goodput_ratio"),
	{Column{Key: "samples", Head: "samples", Group: groupFailures, Kind: KindCount, Desc: "requests counted in the row"}, func(r *Row) Cell {
		s := strconv.FormatInt(r.Samples, 10)
		return fixedCell(formatted{text: s, raw: s, json: r.Samples})
	}},
	{Column{Key: "partial", Head: "partial", Group: groupFailures, Kind: KindText, Desc: "the run was cut short; see the notes"}, func(r *Row) Cell {
		c := formatted{text: "no", raw: "false", json: r.Partial}
		if r.Partial {
			c.text, c.raw, c.reason = "PARTIAL", "true", orUnknown(r.PartialReason)
		}
		return fixedCell(c)
	}},
	{Column{Key: "partial_reason", Group: groupFailures, Kind: KindText}, func(r *Row) Cell {
		return fixedCell(formatted{raw: r.PartialReason, json: r.PartialReason})
	}},
}

// sloCol is the machine-readable verdict of one SLO clause over the row,
// slo_<clause>: PASS, FAIL or N/A (people read the verdicts below the
// table instead).
func sloCol(clause string) rowColumn {
	return rowColumn{Column{Key: "slo_" + clause, Group: groupFailures, Kind: KindText}, func(r *Row) Cell {
		st := r.SLO[clause].String()
		return fixedCell(formatted{raw: st, json: st})
	}}
}

func textCol(key, head, desc string, get func(*Row) string) rowColumn {
	return rowColumn{Column{Key: key, Head: head, Group: groupID, Kind: KindText, Desc: desc}, func(r *Row) Cell {
		v := get(r)
		if v == "" {
			return fixedCell(formatted{text: NA, raw: NA, json: nil, na: true, reason: "not recorded"})
		}
		return fixedCell(formatted{text: v, raw: v, json: v})
	}}
}

// optCol is a numeric column; unlike a Grid's own numeric cells, its JSON
// value is always the Opt object ({"value": …}).
func optCol(key, head, group string, kind Kind, desc string, get func(*Row) Opt) rowColumn {
	return rowColumn{Column{Key: key, Head: head, Group: group, Kind: kind, Desc: desc}, func(r *Row) Cell {
		o := get(r)
		f := NumCell(o).format(kind)
		f.json = o
		return fixedCell(f)
	}}
}

func recoveryCol(key, head, desc string, get func(*Row) Recovery) rowColumn {
	return rowColumn{Column{Key: key, Head: head, Group: groupFailures, Kind: KindSeconds, Desc: desc}, func(r *Row) Cell {
		rec := get(r)
		c := formatted{text: rec.text(), raw: rec.raw(), json: rec}
		switch {
		case c.text == NA:
			c.na, c.reason = true, orUnknown(rec.Reason)
		case rec.State == NotRecovered:
			c.bound, c.reason = true, rec.Reason
		}
		return fixedCell(c)
	}}
}

// grid is the table as a Grid: every column (CSV and JSON keep them all,
// so that their schema does not depend on the experiment), or, for
// people, the columns cols chooses; rows sorted.
func (t *Table) grid(people bool) Grid {
	cols := columns
	if people {
		cols = t.cols()
	}
	g := Grid{Title: t.Title, Meta: t.Meta, Verdicts: t.Verdicts, Notes: t.Notes, Spreads: t.Spreads, Diagnoses: t.Diagnoses}
	for _, c := range cols {
		g.Columns = append(g.Columns, c.Column)
	}
	for _, r := range sortedRows(t.Rows) {
		cells := make([]Cell, len(cols))
		for i := range cols {
			cells[i] = cols[i].get(&r)
		}
		g.Rows = append(g.Rows, cells)
	}
	return g
}

// sortedRows returns the rows ordered by model, workload, deployment and
// multiplier (unavailable multipliers first), keeping the caller's order
// among equals.
func sortedRows(rows []Row) []Row {
	out := slices.Clone(rows)
	slices.SortStableFunc(out, func(a, b Row) int {
		return cmp.Or(
			cmp.Compare(a.Model, b.Model),
			cmp.Compare(a.Workload, b.Workload),
			cmp.Compare(a.Deployment, b.Deployment),
			cmp.Compare(multKey(a.Multiplier), multKey(b.Multiplier)),
		)
	})
	return out
}

func multKey(o Opt) float64 {
	if v, _ := o.state(); v {
		return o.V
	}
	return math.Inf(-1)
}
